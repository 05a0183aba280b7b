//! The harness's parameters: environment variables and flags.

use std::time::Duration;

use provider_pools::Limits;

use crate::BoxError;

/// The run's parameters.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) light_tenants: usize,
    pub(crate) light_submitters: usize,
    pub(crate) flood_factor: usize,
    pub(crate) running: u32,
    pub(crate) service: Duration,
    pub(crate) warmup: Duration,
    pub(crate) measured: Duration,
    pub(crate) paused: bool,
    pub(crate) repeats: usize,
}

fn env_or(name: &str, default: u64) -> Result<u64, BoxError> {
    match std::env::var(name) {
        Ok(value) => Ok(value.parse().map_err(|e| format!("{name}={value}: {e}"))?),
        Err(_) => Ok(default),
    }
}

impl Settings {
    pub(crate) fn from_env() -> Result<Self, BoxError> {
        let mut quick = false;
        let mut paused = false;
        for arg in std::env::args().skip(1) {
            match arg.as_str() {
                "--quick" => quick = true,
                "--paused" => paused = true,
                other => return Err(format!("unknown argument {other:?}").into()),
            }
        }
        let (seconds, warmup_ms, repeats) = if quick { (1, 250, 1) } else { (5, 1_000, 3) };
        let settings = Self {
            light_tenants: env_or("FAIRNESS_LIGHT_TENANTS", 15)? as usize,
            light_submitters: env_or("FAIRNESS_LIGHT_SUBMITTERS", 4)? as usize,
            flood_factor: env_or("FAIRNESS_FLOOD_FACTOR", 100)? as usize,
            running: u32::try_from(env_or("FAIRNESS_RUNNING", 8)?)?,
            service: Duration::from_millis(env_or("FAIRNESS_SERVICE_MS", 10)?),
            warmup: Duration::from_millis(env_or("FAIRNESS_WARMUP_MS", warmup_ms)?),
            measured: Duration::from_secs(env_or("FAIRNESS_SECONDS", seconds)?),
            paused,
            repeats: env_or("FAIRNESS_REPEATS", repeats)?.max(1) as usize,
        };
        let outstanding =
            settings.heavy_submitters() + settings.light_tenants * settings.light_submitters;
        let ceiling = Limits::CEILING;
        if settings.light_tenants == 0 || settings.light_submitters == 0 || settings.running == 0 {
            return Err("light tenants, submitters and running capacity must be positive".into());
        }
        if settings.running > ceiling.running_requests
            || outstanding > (ceiling.pending_requests + settings.running) as usize
        {
            return Err(format!(
                "{outstanding} outstanding requests on {} running slots exceed the pending \
                 ceiling {}",
                settings.running, ceiling.pending_requests
            )
            .into());
        }
        Ok(settings)
    }

    pub(crate) fn heavy_submitters(&self) -> usize {
        self.flood_factor * self.light_submitters
    }
}
