//! What this crate reads, for listings (`aiperf plugins`): the custom dataset formats of
//! `--custom-dataset-type` and the public datasets of `--public-dataset`.
//!
//! ```
//! let formats = aiperf_datasets::listing::dataset_formats();
//! assert!(formats.iter().any(|f| f.name == "mooncake_trace"));
//! assert_eq!(aiperf_datasets::listing::public_datasets()[0].name, "sharegpt");
//! ```

use aiperf_core::capability::Capability;
use aiperf_core::config::CustomDatasetType;

/// Every `--custom-dataset-type`, in the order detection tries them.
pub fn dataset_formats() -> Vec<Capability> {
    CustomDatasetType::ALL
        .iter()
        .map(|format| Capability::always(format.as_str(), format.summary()))
        .collect()
}

/// Every `--public-dataset` this build loads (the catalogue's entries whose rows it
/// converts); the Hugging Face ones need the `hub` feature.
pub fn public_datasets() -> Vec<Capability> {
    crate::catalogue::CATALOGUE
        .iter()
        .filter(|entry| entry.rows.is_supported())
        .map(|entry| match entry.hub_id {
            Some(_) => Capability::optional(
                entry.name,
                entry.summary,
                "aiperf-datasets/hub",
                cfg!(feature = "hub"),
            ),
            None => Capability::always(entry.name, entry.summary),
        })
        .collect()
}
