//! What a model request cost, from a price table shipped as data (`prices/models.json`:
//! list prices per million tokens, with their source and date) and the caller's own prices.
//!
//! Entries are keyed `provider/model`. A dated snapshot (`claude-sonnet-4-5-20250929`) or a
//! `-latest` alias uses its family's entry; any other unknown model, and every `dynamo/…`
//! model (self-hosted: no list price), costs 0 unless `--prices-file` or `--price` says
//! otherwise.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::events::{Cost, Usage};

const BUNDLED: &str = include_str!("../../prices/models.json");

/// US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    #[serde(default)]
    pub cache_read: f64,
    #[serde(default)]
    pub cache_write: f64,
}

impl Price {
    pub fn cost(&self, usage: &Usage) -> Cost {
        let per = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
        let input = per(usage.input, self.input);
        let output = per(usage.output, self.output);
        let cache_read = per(usage.cache_read, self.cache_read);
        let cache_write = per(usage.cache_write, self.cache_write);
        Cost {
            input,
            output,
            cache_read,
            cache_write,
            total: input + output + cache_read + cache_write,
        }
    }

    /// `--price input=3,output=15,cacheRead=0.3,cacheWrite=3.75` (per million tokens).
    pub fn parse(spec: &str) -> Result<Price, String> {
        let mut price = Price::default();
        let (mut input, mut output) = (false, false);
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = part
                .split_once('=')
                .ok_or(format!("expected key=value, got '{part}'"))?;
            let value: f64 = value
                .trim()
                .parse()
                .ok()
                .filter(|v: &f64| is_price(*v))
                .ok_or(format!(
                    "{key}: expected a non-negative number, got '{value}'"
                ))?;
            match key.trim() {
                "input" => (price.input, input) = (value, true),
                "output" => (price.output, output) = (value, true),
                "cacheRead" | "cache_read" => price.cache_read = value,
                "cacheWrite" | "cache_write" => price.cache_write = value,
                other => {
                    return Err(format!(
                        "unknown price '{other}'; expected input, output, cacheRead, cacheWrite"
                    ));
                }
            }
        }
        if !(input && output) {
            return Err("input and output are required, e.g. input=3,output=15".into());
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

/// Prices by `provider/model`.
#[derive(Debug, Clone)]
pub struct PriceTable {
    models: BTreeMap<String, Price>,
}

impl PriceTable {
    /// The table shipped with worker.
    pub fn bundled() -> PriceTable {
        let models = serde_json::from_str::<PriceFile>(BUNDLED)
            .map(|file| file.models)
            .unwrap_or_default();
        PriceTable { models }
    }

    /// Adds (or replaces) the entries of a file in the bundled file's shape.
    pub fn merge_file(&mut self, path: &Path) -> Result<(), String> {
        let text = crate::input_file::read_text(path, crate::input_file::InputKind::Prices)
            .map_err(|err| err.to_string())?;
        let file: PriceFile = serde_json::from_str(&text).map_err(|err| err.to_string())?;
        for (model, price) in &file.models {
            let fields = [
                ("input", price.input),
                ("output", price.output),
                ("cacheRead", price.cache_read),
                ("cacheWrite", price.cache_write),
            ];
            if let Some((field, value)) = fields.iter().find(|(_, value)| !is_price(*value)) {
                return Err(format!(
                    "models.{model}.{field}: expected a non-negative number, got {value}"
                ));
            }
        }
        self.models.extend(file.models);
        Ok(())
    }

    /// The price of `model` at `provider`, if the table has one.
    pub fn lookup(&self, provider: &str, model: &str) -> Option<Price> {
        let key = format!("{provider}/{}", family(model));
        self.models.get(&key).copied()
    }
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
