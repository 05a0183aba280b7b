//! `NodeConfig::parse` on arbitrary UTF-8, then `installations()` when it
//! parses: never a panic, every refusal typed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use provider_pools::node::NodeConfig;

fuzz_target!(|text: &str| {
    if let Ok(config) = NodeConfig::parse(text) {
        match config.installations() {
            Ok(installations) => {
                let _ = format!("{installations:?}");
            }
            Err(error) => {
                let _ = error.to_string();
            }
        }
    } else if let Err(error) = NodeConfig::parse(text) {
        let _ = error.to_string();
    }
});
