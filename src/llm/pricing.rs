//! What a model request cost, from a price table shipped as data (`prices/models.json`:
//! list prices per million tokens, generated from Pi's model registry by
//! `scripts/prices-from-pi.sh`, so every model agentic-pi prices is priced the same) and the
//! caller's own prices.
//!
//! Entries are keyed `provider/model`. A model without an entry of its own that is a dated
//! snapshot (`…-20250929`) or a `-latest` alias uses its family's entry; any other unknown
//! model, and every `dynamo/…` model (self-hosted: no list price), costs 0 unless
//! `--prices-file` or `--price` says otherwise. Long-context pricing is Pi's: the highest tier
//! whose `inputTokensAbove` the request's input (cache reads and writes included) exceeds
//! replaces the base prices for the whole request.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use serde::Deserialize;

use crate::events::{Cost, Usage};

const BUNDLED: &str = include_str!("../../prices/models.json");
include!(concat!(env!("OUT_DIR"), "/priced_providers.rs"));

/// US dollars per million tokens.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Price {
    /// US dollars per million input tokens (those neither read from nor written to the cache).
    pub input: f64,
    /// US dollars per million output tokens.
    pub output: f64,
    /// US dollars per million input tokens read from the cache; 0 when not given.
    #[serde(default)]
    pub cache_read: f64,
    /// US dollars per million input tokens written to the cache; 0 when not given.
    #[serde(default)]
    pub cache_write: f64,
    /// Prices for long requests, replacing these above a size.
    #[serde(default)]
    pub tiers: Vec<Tier>,
}

/// The prices of a request whose input exceeds `input_tokens_above`.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Tier {
    /// The tier applies to a request whose input (cache reads and writes included) exceeds this
    /// many tokens.
    pub input_tokens_above: u64,
    /// US dollars per million input tokens in this tier.
    pub input: f64,
    /// US dollars per million output tokens in this tier.
    pub output: f64,
    /// US dollars per million cache-read tokens in this tier; 0 when not given.
    #[serde(default)]
    pub cache_read: f64,
    /// US dollars per million cache-write tokens in this tier; 0 when not given.
    #[serde(default)]
    pub cache_write: f64,
}

/// Why `--price` or a prices file was refused.
#[derive(Debug, thiserror::Error)]
pub enum PriceError {
    /// A `--price` part without `=`; carries the part.
    #[error("expected key=value, got '{0}'")]
    NotKeyValue(String),
    /// A `--price` value that is not a finite, non-negative number.
    #[error("{key}: expected a non-negative number, got '{value}'")]
    NotAPrice {
        /// The key, as written.
        key: String,
        /// The value, as written.
        value: String,
    },
    /// A `--price` key that is none of the four prices; carries the key.
    #[error("unknown price '{0}'; expected input, output, cacheRead, cacheWrite")]
    UnknownKey(String),
    /// `--price` without `input` or without `output`.
    #[error("input and output are required, e.g. input=3,output=15")]
    Required,
    /// The prices file could not be read.
    #[error(transparent)]
    Read(#[from] crate::input_file::InputFileError),
    /// The prices file is not JSON in the bundled file's shape.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A price in the prices file is negative or not finite.
    #[error("models.{model}.{field}: expected a non-negative number, got {value}")]
    FileNotAPrice {
        /// The `provider/model` key of the entry.
        model: String,
        /// The price's field (`cacheRead`, `tiers[0].input`, …).
        field: String,
        /// The value the file gives.
        value: f64,
    },
}

impl Price {
    /// What `usage` cost at these prices, in US dollars: at the highest tier the request's input
    /// exceeds, else at the base prices.
    pub fn cost(&self, usage: &Usage) -> Cost {
        let size = usage.input + usage.cache_read + usage.cache_write;
        let rates = self
            .tiers
            .iter()
            .filter(|tier| size > tier.input_tokens_above)
            .max_by_key(|tier| tier.input_tokens_above)
            .map_or(
                [self.input, self.output, self.cache_read, self.cache_write],
                |tier| [tier.input, tier.output, tier.cache_read, tier.cache_write],
            );
        let per = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
        let input = per(usage.input, rates[0]);
        let output = per(usage.output, rates[1]);
        let cache_read = per(usage.cache_read, rates[2]);
        let cache_write = per(usage.cache_write, rates[3]);
        Cost {
            input,
            output,
            cache_read,
            cache_write,
            total: input + output + cache_read + cache_write,
        }
    }

    /// `--price input=3,output=15,cacheRead=0.3,cacheWrite=3.75` (per million tokens).
    pub fn parse(spec: &str) -> Result<Price, PriceError> {
        let mut price = Price::default();
        let (mut input, mut output) = (false, false);
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| PriceError::NotKeyValue(part.to_string()))?;
            let value: f64 = value
                .trim()
                .parse()
                .ok()
                .filter(|v: &f64| is_price(*v))
                .ok_or_else(|| PriceError::NotAPrice {
                    key: key.to_string(),
                    value: value.to_string(),
                })?;
            match key.trim() {
                "input" => (price.input, input) = (value, true),
                "output" => (price.output, output) = (value, true),
                "cacheRead" | "cache_read" => price.cache_read = value,
                "cacheWrite" | "cache_write" => price.cache_write = value,
                other => return Err(PriceError::UnknownKey(other.to_string())),
            }
        }
        if !(input && output) {
            return Err(PriceError::Required);
        }
        Ok(price)
    }
}

#[derive(Deserialize)]
struct PriceFile {
    #[serde(default)]
    #[allow(dead_code)]
    about: Option<String>,
    models: BTreeMap<String, Price>,
}

/// Prices by `provider/model`: the bundled table, under the entries of `--prices-file`.
///
/// The bundled table (about 100 KiB of JSON) is parsed the first time a provider it lists is
/// looked up, not at startup: most runs (Dynamo, a local server) never need it, and parsing
/// it was a third of a short run's instructions.
#[derive(Debug, Clone, Default)]
pub struct PriceTable {
    /// From `--prices-file`, replacing bundled entries of the same name.
    added: BTreeMap<String, Price>,
}

impl PriceTable {
    /// The table shipped with worker.
    pub fn bundled() -> PriceTable {
        PriceTable::default()
    }

    /// Adds (or replaces) the entries of a file in the bundled file's shape.
    pub fn merge_file(&mut self, path: &Path) -> Result<(), PriceError> {
        let text = crate::input_file::read_text(path, crate::input_file::InputKind::Prices)?;
        let file: PriceFile = serde_json::from_str(&text)?;
        for (model, price) in &file.models {
            let mut fields = vec![
                ("input".to_string(), price.input),
                ("output".to_string(), price.output),
                ("cacheRead".to_string(), price.cache_read),
                ("cacheWrite".to_string(), price.cache_write),
            ];
            for (i, tier) in price.tiers.iter().enumerate() {
                fields.extend([
                    (format!("tiers[{i}].input"), tier.input),
                    (format!("tiers[{i}].output"), tier.output),
                    (format!("tiers[{i}].cacheRead"), tier.cache_read),
                    (format!("tiers[{i}].cacheWrite"), tier.cache_write),
                ]);
            }
            if let Some((field, value)) = fields.into_iter().find(|(_, value)| !is_price(*value)) {
                return Err(PriceError::FileNotAPrice {
                    model: model.clone(),
                    field,
                    value,
                });
            }
        }
        self.added.extend(file.models);
        Ok(())
    }

    /// The price of `model` at `provider`, if the table has one: its own entry, else its
    /// family's.
    pub fn lookup(&self, provider: &str, model: &str) -> Option<Price> {
        let exact = format!("{provider}/{model}");
        let family = format!("{provider}/{}", family(model));
        let bundled = lists_provider(provider).then(bundled_models);
        let find = |key: &str| {
            self.added
                .get(key)
                .or_else(|| bundled.and_then(|models| models.get(key)))
        };
        find(&exact).or_else(|| find(&family)).cloned()
    }

    /// Every `provider/model` the table prices.
    pub fn models(&self) -> impl Iterator<Item = (&str, &Price)> {
        let mut all: BTreeMap<&str, &Price> = bundled_models()
            .iter()
            .map(|(key, price)| (key.as_str(), price))
            .collect();
        all.extend(self.added.iter().map(|(key, price)| (key.as_str(), price)));
        all.into_iter()
    }
}

/// Whether the bundled table has entries for `provider` (listed by the build script), so that
/// a run with another provider never reads the table.
fn lists_provider(provider: &str) -> bool {
    PRICED_PROVIDERS.binary_search(&provider).is_ok()
}

/// The bundled table, parsed once.
fn bundled_models() -> &'static BTreeMap<String, Price> {
    static MODELS: OnceLock<BTreeMap<String, Price>> = OnceLock::new();
    MODELS.get_or_init(|| {
        serde_json::from_str::<PriceFile>(BUNDLED)
            .map(|file| file.models)
            .unwrap_or_default()
    })
}

/// A price per million tokens: finite and not negative.
fn is_price(value: f64) -> bool {
    value.is_finite() && value >= 0.0
}

/// A model id without a trailing date (`-20250929`) or `-latest`.
fn family(model: &str) -> &str {
    if let Some(stem) = model.strip_suffix("-latest") {
        return stem;
    }
    match model.rsplit_once('-') {
        Some((stem, date)) if date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit()) => stem,
        _ => model,
    }
}

#[cfg(test)]
mod tests;
