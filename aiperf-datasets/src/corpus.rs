//! The built-in prompt corpus: English-like sentences written for this project, one per
//! line. Synthetic prompts are cut from a long, seeded shuffle of these sentences.

/// The sentences, one per line (plain ASCII).
pub(crate) const SENTENCES: &str = "\
The morning train left the station a few minutes late because of fog over the river.
She kept a small notebook in her coat pocket and wrote down every idea before it faded.
Our team measured the latency of each request and plotted the results on a single chart.
A quiet library at the edge of town lends out tools as well as books.
The baker opened the shop at five and the smell of fresh bread filled the whole street.
Most bridges in the valley were built of stone more than a century ago.
He explained the plan twice, slowly, so that nobody would miss a single step.
When the power failed, the old radio on the shelf became the only source of news.
The committee agreed to meet again next week after reading the full report.
A careful gardener waters the roots in the evening, not the leaves at noon.
Clouds gathered over the hills while the children finished building their raft.
The new bicycle lane runs along the canal from the market to the university.
Every server in the rack reported a healthy status after the firmware update.
The recipe asks for two cups of flour, a pinch of salt, and warm water.
During the long winter the village relied on a single road over the pass.
She tuned the violin by ear and then played a short, cheerful melody.
Engineers often prefer simple designs that can be repaired with common parts.
The museum added a room of maps that show how the coastline changed over time.
Rain tapped against the window as the meeting dragged on into the evening.
A good question can be more useful than a quick answer.
The farmer rotates his crops each year so that the soil stays rich.
They painted the fence blue, although the neighbors had voted for green.
The harbor was crowded with fishing boats waiting for the tide to turn.
Our test suite runs every night and sends a summary to the whole group.
The mountain trail is steep at first, then levels out near a small lake.
He forgot his umbrella on the bus and walked home through the storm.
In the spring the orchard fills with blossoms and the hum of bees.
The report found that most delays came from waiting, not from working.
A lighthouse keeper once lived on that rock with two dogs and a goat.
She learned to read music before she could read the newspaper.
The cafe on the corner serves soup in bowls made by a local potter.
After the storm, volunteers cleared the branches from every road in the district.
The software team moved the slow job to a queue that runs at night.
Snow fell all afternoon and covered the parked cars in a soft white layer.
His grandmother taught him to fold paper into birds, boats, and stars.
The council planted a row of oak trees along the edge of the new park.
A clear label on each box saves hours when it is time to unpack.
The river rises every autumn and floods the low meadow by the mill.
We compared three methods and chose the one that was easiest to explain.
The students built a small weather station on the roof of the school.
An honest mistake is easier to fix when it is reported early.
The market sells apples, cheese, honey, and wool from the nearby farms.
The ferry crosses the bay every hour, even when the wind is strong.
She reads the last page of a novel first, which annoys all her friends.
The old clock in the hall runs four minutes fast, and nobody minds.
Good documentation explains why a choice was made, not only what it does.
The kitchen window looks out on a field where horses graze at dawn.
The pilot announced a short delay while the crew loaded extra fuel.
Three friends started a choir that now has more than forty members.
The bridge was closed for repairs, so the bus took the long way around.
Every evening the fishermen mend their nets on the stone pier.
A thin layer of ice formed on the pond during the clear, cold night.
The manager asked each person to name one thing that slowed them down.
The valley echoed with the sound of bells from the distant church.
They measured the room twice before ordering the new carpet.
The travelers shared bread and stories around a small fire.
A well placed shelf can turn an empty corner into a reading nook.
The factory switched to solar panels and cut its energy bill in half.
Her brother repairs watches in a tiny shop behind the train station.
The forecast promised sunshine, yet the picnic ended in a downpour.
Careful notes made it possible to repeat the experiment a year later.
The cat slept on the warm laptop until the meeting was over.
The city library keeps old newspapers on film in the basement.
A narrow path winds between the dunes down to the quiet beach.
The team celebrated the release with cake and a long walk in the park.
He planted tomatoes, beans, and peppers in neat rows behind the house.
The teacher drew a large circle on the board and asked what it could be.
The orchestra rehearsed the final movement until it sounded effortless.
A strong wind scattered the leaves across the empty playground.
They installed a larger water tank to get through the dry summer.
The lawyer read the contract aloud, one clause at a time.
Her garden attracts butterflies from every meadow in the valley.
The tunnel saves twenty minutes on the drive between the two towns.
Nobody expected the quiet new colleague to win the chess tournament.
The map was accurate except for a road that had been moved years ago.
We waited at the gate while the guard checked every name on the list.
The painter mixed a dozen shades of gray before choosing the right one.
A small change in the input can lead to a large change in the output.
The ship's cook made pancakes every Sunday, no matter how rough the sea.
The hikers reached the hut just as the first stars appeared.
A loose board on the porch creaks whenever someone comes to visit.
The research group published its data so that others could check the work.
His favorite chair has a broken spring that only he knows how to avoid.
The town square fills with music and lanterns on the first night of summer.
The pharmacist explained how to take the medicine with food and water.
The lake froze so solidly that the children skated across to the island.
She sketched the old mill from the bridge while the light was still soft.
The help desk answered more calls on Monday than during the rest of the week.
An apple tree in the yard gives more fruit than the family can eat.
The printer jammed again, so the meeting notes were shared by email.
Tall grass hid the path, but the dog found it without any trouble.
The carpenter measured, marked, and cut each board with great patience.
Fresh paint and new lamps made the tired hallway feel welcoming.
The radio host read letters from listeners who had moved far away.
Traffic slowed near the stadium as the crowd left after the match.
The scientist repeated the measurement at three different temperatures.
His first attempt at bread was flat, but the second one rose nicely.
The hotel by the lake has a porch with rocking chairs facing the water.
A tidy workbench makes it easier to find the right screw.
The festival ended with fireworks that reflected in the harbor.
She trained for months before running her first long race.
The guide pointed out birds that most visitors would never notice.
An old map hung in the hallway, stained by tea and time.
The load balancer spread the requests evenly across four machines.
The neighbors share a ladder, a lawn mower, and a large wheelbarrow.
The bakery donates its leftover bread to the shelter every evening.
A sudden gust lifted the tablecloth and scattered the napkins.
The classroom smelled of chalk, wet coats, and orange peel.
He practiced the speech in front of the mirror until he knew it by heart.
The canal boats move so slowly that walkers easily pass them.
Our budget covers travel, equipment, and a modest amount for training.
The pianist paused, smiled at the audience, and began the encore.
Frost painted ferns across the window of the cold bedroom.
The inspector found nothing wrong, yet she asked for one more test.
A long queue formed outside the theater an hour before the doors opened.
The gardener saved seeds from the best plants for next year.
The mechanic listened to the engine and guessed the problem at once.
The wooden boat was painted red and named after the captain's daughter.
Each morning the town crier read the news from the steps of the hall.
The scouts learned to pitch a tent, light a stove, and read a compass.
The cost of the project grew as the list of features grew longer.
A single candle lit the room while the storm knocked out the lights.
The tailor pinned the sleeve and asked the customer to raise his arm.
The dashboard shows throughput, latency, and the number of errors each minute.
Birds gathered on the wire as the sun dropped behind the hills.
The family kept a jar of buttons that nobody ever used.
The new road made the journey shorter but the view less interesting.
The nurse checked each patient twice before the end of her shift.
They planted wildflowers along the railway line to help the bees.
The archive keeps letters written by the founders of the town.
A polite reminder is often all it takes to get a reply.
The observatory opens to the public on clear nights in the summer.
The chef tasted the sauce, added lemon, and tasted it again.
A small bell above the door rang every time a customer came in.
The runners crossed the finish line in the rain, tired but happy.
The students argued about the answer until the bell rang.
The old bus still runs every morning, rattling down the hill.
The city opened a new swimming pool with a slide for the children.
A detailed checklist helped the crew prepare the plane in record time.
Moss covered the north side of every stone in the old wall.
The company moved its office to a brighter building near the river.
He keeps spare keys in a tin that used to hold biscuits.
The quiet hour before sunrise is when she does her best thinking.
Water dripped from the roof long after the rain had stopped.
The committee thanked the volunteers and promised to repeat the event next year.
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corpus_is_ascii_and_substantial() {
        assert!(SENTENCES.is_ascii());
        let lines = SENTENCES.lines().filter(|l| !l.trim().is_empty()).count();
        assert!(lines >= 100, "{lines}");
        assert!(SENTENCES.len() > 5_000);
    }
}
