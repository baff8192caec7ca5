//! Splitting a weka trace's flat requests into agent chains, as 0.13 does.
//!
//! Captures record untagged agent fan-outs (workflow agents, headerless subagents) as
//! interleaved top-level requests. Every request carries its whole context as hash ids,
//! so the requests of one agent extend one another's hash lists: a request joins the
//! chain whose last request is a whole prefix of its own (deepest first), has ended by
//! the time it starts, and ran on the same model. Anything else starts a new chain,
//! forked from the chain it shares the longest prefix with.
//!
//! A request that shares only part of a chain's last context is either that agent
//! carrying on after a context edit (a compaction: a join seam) or a new agent spawned
//! off it. It is the same agent exactly when no later request of the chain goes back to
//! the longer context; so chains are first built forking on every shrink, then each fork
//! off a context nobody extended afterwards is elected back onto its chain (the deepest,
//! then the earliest), unless it started more than [`SEAM_MAX_GAP_S`] after that context
//! ended while sharing less than [`SEAM_MIN_OVERLAP`] of it (a distinct session reusing
//! a base prefix, not a prompt compaction).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};

/// A gap (seconds) past which a low-overlap continuation is not spliced on (0.13's
/// `AIPERF_DATASET_WEKA_SEAM_MAX_GAP_SECONDS` default).
const SEAM_MAX_GAP_S: f64 = 3600.0;
/// The share of the ended context a continuation past [`SEAM_MAX_GAP_S`] must keep to be
/// spliced on (0.13's `AIPERF_DATASET_WEKA_SEAM_MIN_OVERLAP_RATIO` default).
const SEAM_MIN_OVERLAP: f64 = 0.5;
/// A leading request with at most this many output tokens and no shared prefix is a
/// title-generation call, not the session's first turn.
const TITLE_MAX_OUTPUT: u64 = 64;
/// Tolerance (seconds) of recorded times, rounded to the microsecond.
const EPSILON_S: f64 = 1e-6;

/// One request to place: `index` names it to the caller.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChainRequest<'a> {
    pub(crate) index: usize,
    /// Start, in seconds on the trace's clock.
    pub(crate) t: f64,
    /// Start plus the recorded `api_time` (0 when absent or unusable).
    pub(crate) end: f64,
    pub(crate) model: &'a str,
    pub(crate) hash_ids: &'a [u64],
    pub(crate) input_length: u64,
    pub(crate) output_length: u64,
}

/// The chains of a set of requests, each a list of request `index`es in (`t`, `index`)
/// order.
#[derive(Debug, PartialEq)]
pub(crate) struct AgentChains {
    /// The chain of the earliest request (a leading title-generation call rides on it).
    pub(crate) main: Vec<usize>,
    /// Every other chain, in order of its first request.
    pub(crate) workers: Vec<Worker>,
}

/// A chain other than the main one.
#[derive(Debug, PartialEq)]
pub(crate) struct Worker {
    pub(crate) requests: Vec<usize>,
    pub(crate) kind: WorkerKind,
}

/// What a worker chain is, as 0.13 names it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum WorkerKind {
    /// An agent of its own (`fa:`).
    Agent,
    /// A one-shot sidecar call (`aux:`): a single request on another model than the
    /// main chain's, or starting from a small fresh context, or a large-input,
    /// short-output reduction (a compaction or a summary).
    Auxiliary,
    /// Member `member` of parallel fan-out `group` (`wg:`): at least [`GROUP_MIN`]
    /// agents forked off the same request that ran at overlapping times.
    Group { group: usize, member: usize },
}

/// An auxiliary chain's input is under this share of the main chain's largest...
const AUX_ISL_RATIO: f64 = 0.10;
/// ...or under this many tokens (0.13's `WEKA_AUX_ISL_FLOOR`); a reduction's is not.
const AUX_ISL_FLOOR: u64 = 16_384;
/// A reduction's output is under this many tokens...
const REDUCTION_OSL_MAX: u64 = 4_000;
/// ...and its input over this many times its output.
const REDUCTION_RATIO: f64 = 20.0;
/// The fewest overlapping agents off one request that make a fan-out group.
const GROUP_MIN: usize = 3;

/// Splits `requests` into agent chains.
pub(crate) fn split(requests: &[ChainRequest<'_>]) -> AgentChains {
    let mut ordered: Vec<ChainRequest<'_>> = requests.to_vec();
    ordered.sort_by(|a, b| a.t.total_cmp(&b.t).then(a.index.cmp(&b.index)));
    let preamble = title_call(&ordered).then(|| ordered.remove(0));
    let Some(first) = ordered.first().map(|r| r.index) else {
        return AgentChains {
            main: preamble.map(|r| r.index).into_iter().collect(),
            workers: Vec::new(),
        };
    };
    let mut detection = Detection::default();
    for request in &ordered {
        detection.place(*request);
    }
    detection.splice_seams();

    let by_index: HashMap<usize, &ChainRequest<'_>> =
        requests.iter().map(|r| (r.index, r)).collect();
    let sorted = |mut chain: Vec<usize>| {
        chain.sort_by(|a, b| {
            let (a, b) = (by_index[a], by_index[b]);
            a.t.total_cmp(&b.t).then(a.index.cmp(&b.index))
        });
        chain
    };
    let main_chain = detection.owner(first);
    let mut main = detection.chains[main_chain].requests.clone();
    // The detected main chain (without a title call) is the yardstick of the others.
    let main_model = main.first().map(|i| by_index[i].model);
    let main_peak = main
        .iter()
        .map(|i| by_index[i].input_length)
        .max()
        .unwrap_or(0);
    main.extend(preamble.map(|r| r.index));
    let mut live: Vec<usize> = (0..detection.chains.len())
        .filter(|&at| at != main_chain && detection.chains[at].spliced_into.is_none())
        .collect();
    let first_of = |chain: usize| by_index[&detection.chains[chain].requests[0]];
    live.sort_by(|&a, &b| {
        let (a, b) = (first_of(a), first_of(b));
        a.t.total_cmp(&b.t).then(a.index.cmp(&b.index))
    });
    let groups = fan_out_groups(&detection, &live, &by_index);
    let workers = live
        .iter()
        .map(|&chain| {
            let requests = sorted(detection.chains[chain].requests.clone());
            let placed: Vec<&ChainRequest<'_>> = requests.iter().map(|i| by_index[i]).collect();
            let kind = if is_auxiliary(&placed, main_model, main_peak) {
                WorkerKind::Auxiliary
            } else {
                groups.get(&chain).copied().unwrap_or(WorkerKind::Agent)
            };
            Worker { requests, kind }
        })
        .collect();
    AgentChains {
        main: sorted(main),
        workers,
    }
}

/// Whether a worker chain of `requests` (in time order) is a one-shot sidecar.
fn is_auxiliary(requests: &[&ChainRequest<'_>], main_model: Option<&str>, main_peak: u64) -> bool {
    // 0.13's `WEKA_AUX_MAX_REQUESTS` default: only a single request is a sidecar.
    let [first] = requests else {
        return false;
    };
    if main_model.is_some_and(|model| model != first.model) {
        return true;
    }
    let small = AUX_ISL_FLOOR.max((AUX_ISL_RATIO * main_peak as f64) as u64);
    if first.input_length < small {
        return true;
    }
    let output = first.output_length;
    output > 0
        && output < REDUCTION_OSL_MAX
        && first.input_length >= AUX_ISL_FLOOR
        && first.input_length as f64 > REDUCTION_RATIO * output as f64
}

/// When a worker chain ran: its first request's start to its last request's end.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: f64,
    end: f64,
    /// Its first request (breaks ties of start).
    first: usize,
    chain: usize,
}

impl Span {
    fn earlier(&self, other: &Self) -> std::cmp::Ordering {
        self.start
            .total_cmp(&other.start)
            .then(self.first.cmp(&other.first))
    }
}

/// The fan-out groups among the `live` worker chains (in order of first request):
/// chains forked with a shared prefix off the same request whose spans (first start to
/// last end) overlap, at least [`GROUP_MIN`] of them; groups numbered by their earliest
/// start, members by start.
fn fan_out_groups(
    detection: &Detection<'_>,
    live: &[usize],
    by_index: &HashMap<usize, &ChainRequest<'_>>,
) -> HashMap<usize, WorkerKind> {
    // The spans of the chains forked off each request.
    let mut by_fork: Vec<(usize, Vec<Span>)> = Vec::new();
    for &chain in live {
        let Some(fork) = detection.chains[chain].fork.filter(|f| f.depth > 0) else {
            continue;
        };
        let requests = &detection.chains[chain].requests;
        let first = requests
            .iter()
            .map(|i| by_index[i])
            .min_by(|a, b| a.t.total_cmp(&b.t).then(a.index.cmp(&b.index)));
        let Some(first) = first else { continue };
        let span = Span {
            start: first.t,
            end: requests
                .iter()
                .map(|i| by_index[i].end)
                .fold(f64::NEG_INFINITY, f64::max),
            first: first.index,
            chain,
        };
        match by_fork.iter_mut().find(|(from, _)| *from == fork.from) {
            Some((_, spans)) => spans.push(span),
            None => by_fork.push((fork.from, vec![span])),
        }
    }
    let mut groups: Vec<Vec<Span>> = by_fork
        .into_iter()
        .flat_map(|(_, spans)| overlapping(spans))
        .filter(|group| group.len() >= GROUP_MIN)
        .collect();
    groups.sort_by(|a, b| a[0].earlier(&b[0]));
    groups
        .iter()
        .enumerate()
        .flat_map(|(group, members)| {
            members
                .iter()
                .enumerate()
                .map(move |(member, span)| (span.chain, WorkerKind::Group { group, member }))
        })
        .collect()
}

/// The sets of `spans` connected by overlaps, each in order of start; touching spans
/// (one ending as the other starts) do not overlap.
fn overlapping(mut spans: Vec<Span>) -> Vec<Vec<Span>> {
    spans.sort_by(Span::earlier);
    let mut sets: Vec<Vec<Span>> = Vec::new();
    // The latest end so far: a span starting before it joins the set being built.
    let mut reach = f64::NEG_INFINITY;
    for span in spans {
        match sets.last_mut() {
            Some(set) if span.start < reach => set.push(span),
            _ => sets.push(vec![span]),
        }
        reach = reach.max(span.end);
    }
    sets
}

/// Whether the earliest of `ordered` is a throwaway leading call: it shares no prefix
/// with any later request, and is short (a title) or reuses none of its blocks later
/// (a one-shot). Left in, it would found the main chain and demote the real session.
fn title_call(ordered: &[ChainRequest<'_>]) -> bool {
    let Some((first, rest)) = ordered.split_first() else {
        return false;
    };
    if rest.is_empty() || first.hash_ids.is_empty() {
        return false;
    }
    if rest
        .iter()
        .any(|r| common_prefix(first.hash_ids, r.hash_ids) > 0)
    {
        return false;
    }
    first.output_length <= TITLE_MAX_OUTPUT || {
        let later: HashSet<u64> = rest.iter().flat_map(|r| r.hash_ids).copied().collect();
        first.hash_ids.iter().all(|id| !later.contains(id))
    }
}

/// How many leading ids `a` and `b` share.
fn common_prefix(a: &[u64], b: &[u64]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Where a chain split off another.
#[derive(Debug, Clone, Copy)]
struct Fork {
    /// The request whose context it shares (the forked chain's last one back then).
    from: usize,
    /// How many blocks it shares with it.
    depth: usize,
}

/// The last hash-bearing request of a chain while chains are built.
#[derive(Debug, Clone, Copy)]
struct Tail<'a> {
    index: usize,
    hash_ids: &'a [u64],
    end: f64,
    model: &'a str,
}

#[derive(Debug, Default)]
struct Chain<'a> {
    requests: Vec<usize>,
    fork: Option<Fork>,
    tail: Option<Tail<'a>>,
    spliced_into: Option<usize>,
}

#[derive(Debug, Default)]
struct Detection<'a> {
    chains: Vec<Chain<'a>>,
    chain_of: HashMap<usize, usize>,
    requests: HashMap<usize, ChainRequest<'a>>,
    /// The chains forked off each request (with a shared prefix).
    forks_of: HashMap<usize, Vec<usize>>,
}

impl<'a> Detection<'a> {
    fn append(&mut self, chain: usize, request: ChainRequest<'a>) {
        let target = &mut self.chains[chain];
        target.requests.push(request.index);
        if !request.hash_ids.is_empty() {
            target.tail = Some(Tail {
                index: request.index,
                hash_ids: request.hash_ids,
                end: request.end,
                model: request.model,
            });
        }
        self.chain_of.insert(request.index, chain);
    }

    /// Puts `request` (the next in time) on a chain, or founds one.
    fn place(&mut self, request: ChainRequest<'a>) {
        self.requests.insert(request.index, request);
        if self.chains.is_empty() {
            self.chains.push(Chain::default());
        }
        // No hash ids, no evidence: it rides on the first chain, invisible to the rest.
        if request.hash_ids.is_empty() {
            self.chains[0].requests.push(request.index);
            self.chain_of.insert(request.index, 0);
            return;
        }
        if let Some(chain) = self.extended_chain(&request) {
            return self.append(chain, request);
        }
        let parent = self.deepest_shared(request.hash_ids);
        if parent.is_none() && self.chains.iter().all(|c| c.tail.is_none()) {
            return self.append(0, request);
        }
        let fork = parent.and_then(|(chain, depth)| {
            let tail = self.chains[chain].tail?;
            Some(Fork {
                from: tail.index,
                depth,
            })
        });
        let chain = self.chains.len();
        self.chains.push(Chain {
            fork,
            ..Chain::default()
        });
        self.append(chain, request);
        if let Some(fork) = fork.filter(|f| f.depth > 0) {
            self.forks_of.entry(fork.from).or_default().push(chain);
        }
    }

    /// The chain whose last context is a whole prefix of `request`'s, which ended by its
    /// start on the same model: the deepest, then the first.
    fn extended_chain(&self, request: &ChainRequest<'_>) -> Option<usize> {
        let mut best: Option<(usize, usize)> = None;
        for (at, chain) in self.chains.iter().enumerate() {
            let Some(tail) = chain.tail else { continue };
            let len = tail.hash_ids.len();
            if len > request.hash_ids.len() || best.is_some_and(|(_, l)| len <= l) {
                continue;
            }
            if tail.model == request.model
                && tail.end <= request.t + EPSILON_S
                && request.hash_ids.starts_with(tail.hash_ids)
            {
                best = Some((at, len));
            }
        }
        best.map(|(at, _)| at)
    }

    /// The chain whose last context shares the longest prefix with `hash_ids` (then the
    /// longer context, then the first chain), and how many blocks it shares.
    fn deepest_shared(&self, hash_ids: &[u64]) -> Option<(usize, usize)> {
        let mut best: Option<(usize, (usize, usize))> = None;
        for (at, chain) in self.chains.iter().enumerate() {
            let Some(tail) = chain.tail else { continue };
            let depth = common_prefix(tail.hash_ids, hash_ids);
            let key = (depth, tail.hash_ids.len());
            if depth > 0 && best.is_none_or(|(_, k)| key > k) {
                best = Some((at, key));
            }
        }
        best.map(|(at, (depth, _))| (at, depth))
    }

    /// The live chain holding `request` (following splices).
    fn owner(&self, request: usize) -> usize {
        let mut chain = self.chain_of[&request];
        while let Some(into) = self.chains[chain].spliced_into {
            chain = into;
        }
        chain
    }

    /// The last hash-bearing request of `chain`.
    fn last_with_hashes(&self, chain: usize) -> Option<usize> {
        self.chains[chain]
            .requests
            .iter()
            .rev()
            .copied()
            .find(|i| !self.requests[i].hash_ids.is_empty())
    }

    /// Splices each elected continuation back onto the chain whose context it
    /// shortened, visiting the forked-off requests in order; the other forks of a
    /// consumed context are matched again against the merged chain's new last request.
    fn splice_seams(&mut self) {
        let mut pending: BinaryHeap<Reverse<usize>> =
            self.forks_of.keys().copied().map(Reverse).collect();
        let mut visited = HashSet::new();
        while let Some(Reverse(from)) = pending.pop() {
            if !visited.insert(from) {
                continue;
            }
            let owner = self.owner(from);
            if self.last_with_hashes(owner) != Some(from) {
                continue; // the longer context went on: every fork off it is a spawn
            }
            let forks: Vec<usize> = self.forks_of[&from]
                .iter()
                .copied()
                .filter(|&c| self.chains[c].spliced_into.is_none())
                .collect();
            let Some(elected) = self.elect(&forks, &self.requests[&from]) else {
                continue;
            };
            let moved = self.chains[elected].requests.clone();
            self.chains[owner].requests.extend(moved);
            self.chains[elected].spliced_into = Some(owner);
            let Some(new_tail) = self.last_with_hashes(owner) else {
                continue;
            };
            let new_hashes = self.requests[&new_tail].hash_ids;
            let mut rekeyed = false;
            for chain in forks.into_iter().filter(|&c| c != elected) {
                let first = self.chains[chain].requests[0];
                let depth = common_prefix(new_hashes, self.requests[&first].hash_ids);
                if depth > 0 {
                    self.chains[chain].fork = Some(Fork {
                        from: new_tail,
                        depth,
                    });
                    self.forks_of.entry(new_tail).or_default().push(chain);
                    rekeyed = true;
                }
            }
            if rekeyed {
                visited.remove(&new_tail);
                pending.push(Reverse(new_tail));
            }
        }
    }

    /// Among `forks` off the ended request `tail`, the one that is the same agent
    /// carrying on: it shares a prefix, starts after `tail` ended on the same model and
    /// is not a late low-overlap restart; the deepest, then the earliest, then the
    /// first founded.
    fn elect(&self, forks: &[usize], tail: &ChainRequest<'_>) -> Option<usize> {
        let tail_blocks = tail.hash_ids.len() as f64;
        forks
            .iter()
            .copied()
            .filter_map(|chain| {
                let fork = self.chains[chain].fork?;
                let first = &self.requests[&self.chains[chain].requests[0]];
                let late = first.t - tail.end > SEAM_MAX_GAP_S
                    && (fork.depth as f64) < SEAM_MIN_OVERLAP * tail_blocks;
                (fork.depth > 0
                    && tail.end <= first.t + EPSILON_S
                    && first.model == tail.model
                    && !late)
                    .then_some((chain, fork.depth, first.t))
            })
            .max_by(|a, b| a.1.cmp(&b.1).then(b.2.total_cmp(&a.2)).then(b.0.cmp(&a.0)))
            .map(|(chain, _, _)| chain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(index: usize, t: f64, api: f64, hash_ids: &[u64]) -> ChainRequest<'_> {
        ChainRequest {
            index,
            t,
            end: t + api,
            model: "opus",
            hash_ids,
            input_length: 20_000,
            output_length: 500,
        }
    }

    fn requests_of(chains: &AgentChains) -> Vec<Vec<usize>> {
        chains.workers.iter().map(|w| w.requests.clone()).collect()
    }

    fn kinds(chains: &AgentChains) -> Vec<WorkerKind> {
        chains.workers.iter().map(|w| w.kind).collect()
    }

    #[test]
    fn a_request_extending_a_finished_context_continues_its_chain() {
        let chains = split(&[
            request(0, 0.0, 1.0, &[1, 2]),
            request(1, 2.0, 1.0, &[1, 2, 3]),
            request(2, 4.0, 1.0, &[1, 2, 3, 4]),
        ]);
        assert_eq!(chains.main, vec![0, 1, 2]);
        assert!(chains.workers.is_empty());
    }

    #[test]
    fn interleaved_agents_sharing_a_base_become_chains_in_order_of_start() {
        // Two workers fork off request 0's context while each other's requests run.
        let chains = split(&[
            request(0, 0.0, 1.0, &[1, 2]),
            request(1, 2.0, 5.0, &[1, 2, 10]),
            request(2, 2.5, 5.0, &[1, 2, 20]),
            request(3, 8.0, 1.0, &[1, 2, 10, 11]),
            request(4, 8.5, 1.0, &[1, 2, 20, 21]),
            request(5, 9.0, 1.0, &[1, 2, 30]),
        ]);
        // Request 1 extends the main chain; 2 starts while 1 runs, so it forks, and
        // 4 extends it. 5 keeps only the base of 3 (the deeper tie with the worker
        // goes to the first chain), and nothing returns to 3's context: a compaction.
        assert_eq!(chains.main, vec![0, 1, 3, 5]);
        assert_eq!(requests_of(&chains), vec![vec![2, 4]]);
    }

    #[test]
    fn a_compaction_nobody_returns_from_is_the_same_agent() {
        // 2 keeps only part of 1's context and nothing goes back to 1's: a join seam.
        let chains = split(&[
            request(0, 0.0, 1.0, &[1, 2]),
            request(1, 2.0, 1.0, &[1, 2, 3, 4]),
            request(2, 4.0, 1.0, &[1, 2, 9]),
            request(3, 6.0, 1.0, &[1, 2, 9, 10]),
        ]);
        assert_eq!(chains.main, vec![0, 1, 2, 3]);
        assert!(chains.workers.is_empty());
    }

    #[test]
    fn a_shrink_the_longer_context_returns_after_is_a_spawn() {
        let chains = split(&[
            request(0, 0.0, 1.0, &[1, 2, 3]),
            request(1, 2.0, 1.0, &[1, 7]),
            request(2, 4.0, 1.0, &[1, 2, 3, 4]),
        ]);
        assert_eq!(chains.main, vec![0, 2]);
        assert_eq!(requests_of(&chains), vec![vec![1]]);
    }

    #[test]
    fn another_model_is_always_another_agent() {
        let mut haiku = request(1, 2.0, 1.0, &[1, 2, 3]);
        haiku.model = "haiku";
        let chains = split(&[request(0, 0.0, 1.0, &[1, 2]), haiku]);
        assert_eq!(chains.main, vec![0]);
        assert_eq!(requests_of(&chains), vec![vec![1]]);
    }

    #[test]
    fn a_late_low_overlap_restart_is_not_spliced_on() {
        let chains = split(&[
            request(0, 0.0, 1.0, &[1, 2, 3, 4]),
            request(1, 4000.0, 1.0, &[1, 9]),
        ]);
        assert_eq!(chains.main, vec![0]);
        assert_eq!(requests_of(&chains), vec![vec![1]]);
    }

    #[test]
    fn a_leading_title_call_rides_on_the_main_chain_without_founding_it() {
        let mut title = request(0, 0.0, 0.5, &[50]);
        title.output_length = 12;
        let chains = split(&[
            title,
            request(1, 1.0, 1.0, &[1, 2]),
            request(2, 3.0, 1.0, &[1, 2, 3]),
        ]);
        assert_eq!(chains.main, vec![0, 1, 2]);
        assert!(chains.workers.is_empty());
    }

    #[test]
    fn requests_without_hash_ids_stay_on_the_main_chain() {
        let chains = split(&[
            request(0, 0.0, 1.0, &[]),
            request(1, 1.0, 1.0, &[1, 2]),
            request(2, 1.5, 1.0, &[1, 2, 3]),
        ]);
        assert_eq!(chains.main, vec![0, 1]);
        assert_eq!(requests_of(&chains), vec![vec![2]]);
    }

    #[test]
    fn one_shot_sidecars_are_auxiliary_and_longer_chains_agents() {
        let mut haiku = request(1, 1.0, 0.5, &[1, 2, 7]);
        haiku.model = "haiku";
        let mut small = request(2, 1.1, 0.5, &[1, 2, 8]);
        small.input_length = 16_383;
        let mut reduction = request(3, 1.2, 0.5, &[1, 2, 9]);
        reduction.output_length = 999; // 20 000 > 20 × 999
        let chains = split(&[
            request(0, 0.0, 5.0, &[1, 2]),
            haiku,
            small,
            reduction,
            // Off the same request as the sidecars, but not running beside them: not
            // a fan-out.
            request(4, 1.8, 0.5, &[1, 2, 10]),
            request(5, 2.5, 0.5, &[1, 2, 10, 11]),
        ]);
        assert_eq!(
            requests_of(&chains),
            vec![vec![1], vec![2], vec![3], vec![4, 5]]
        );
        assert_eq!(
            kinds(&chains),
            [
                WorkerKind::Auxiliary,
                WorkerKind::Auxiliary,
                WorkerKind::Auxiliary,
                WorkerKind::Agent
            ]
        );
    }

    #[test]
    fn three_overlapping_agents_off_one_request_are_a_fan_out_group() {
        // 1, 2 and 3 fork off request 0's context (while it and each other run; every
        // context shares 2 blocks of 3 with theirs, and the tie goes to the first
        // chain); each goes on for a second request, and the main agent with 8.
        let chains = split(&[
            request(0, 0.0, 1.0, &[1, 2, 3]),
            request(1, 0.5, 2.0, &[1, 2, 10]),
            request(2, 0.6, 2.0, &[1, 2, 20]),
            request(3, 0.7, 2.0, &[1, 2, 30]),
            request(5, 3.0, 1.0, &[1, 2, 10, 11]),
            request(6, 3.0, 1.0, &[1, 2, 20, 21]),
            request(7, 3.0, 1.0, &[1, 2, 30, 31]),
            request(8, 1.5, 1.0, &[1, 2, 3, 4]),
        ]);
        assert_eq!(chains.main, vec![0, 8]);
        assert_eq!(
            requests_of(&chains),
            vec![vec![1, 5], vec![2, 6], vec![3, 7]]
        );
        assert_eq!(
            kinds(&chains),
            [
                WorkerKind::Group {
                    group: 0,
                    member: 0
                },
                WorkerKind::Group {
                    group: 0,
                    member: 1
                },
                WorkerKind::Group {
                    group: 0,
                    member: 2
                },
            ]
        );
    }
}
