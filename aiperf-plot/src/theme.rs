//! Light and dark colour schemes.

use plotters::style::RGBColor;

/// The colour scheme of every chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Theme {
    /// Dark text on white.
    #[default]
    Light,
    /// Light text on near-black.
    Dark,
}

/// The colours a theme gives.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Colours {
    pub background: RGBColor,
    pub foreground: RGBColor,
    pub grid: RGBColor,
    pub fine_grid: RGBColor,
    pub series: [RGBColor; 6],
}

impl Theme {
    /// The name used in the report (`light`, `dark`).
    pub fn name(self) -> &'static str {
        match self {
            Theme::Light => "light",
            Theme::Dark => "dark",
        }
    }

    pub(crate) fn colours(self) -> Colours {
        match self {
            Theme::Light => Colours {
                background: RGBColor(255, 255, 255),
                foreground: RGBColor(34, 34, 34),
                grid: RGBColor(200, 200, 200),
                fine_grid: RGBColor(236, 236, 236),
                series: [
                    RGBColor(31, 119, 180),
                    RGBColor(230, 115, 0),
                    RGBColor(44, 160, 44),
                    RGBColor(214, 39, 40),
                    RGBColor(148, 103, 189),
                    RGBColor(140, 86, 75),
                ],
            },
            // Brighter hues: the light scheme's blue and brown vanish on a dark background.
            Theme::Dark => Colours {
                background: RGBColor(24, 26, 31),
                foreground: RGBColor(225, 225, 225),
                grid: RGBColor(80, 84, 92),
                fine_grid: RGBColor(44, 47, 54),
                series: [
                    RGBColor(94, 170, 240),
                    RGBColor(255, 160, 60),
                    RGBColor(100, 210, 100),
                    RGBColor(255, 100, 100),
                    RGBColor(200, 160, 255),
                    RGBColor(220, 180, 140),
                ],
            },
        }
    }
}
