//! Chaos: seeded faults under load. Each seed drives one registry through
//! a schedule of calls and faults drawn from a SplitMix64 stream — dial
//! failures, slow and never-answering dials, panicking dials, request work
//! and provider jobs, slow, failing, never-ending and panicking closes,
//! connection destructors that panic (in the caller, a cleanup task or the
//! epoch actor), futures dropped after a random time or a random number of
//! polls, aborted calls, credential rotations (and stale ones), limits
//! lowered mid-load, and epoch actors killed under the registry's restart
//! policy. On a current-thread runtime with a paused clock, the seed fixes
//! every choice the harness makes, so a seed replays identically.
//!
//! After every step: every count is within the limits in force, and the
//! engine counts at least what the harness holds (a release delivered twice
//! would count less). Once faults stop: every call and job ends on its
//! own (nothing hangs), the harness holds nothing, and shutdown is clean.
//!
//! 200 seeds by default; `CHAOS_SEEDS=N` runs seeds `0..N`, `CHAOS_SEED=k`
//! replays seed `k` alone (`CHAOS_TRACE=1` prints all its steps on failure,
//! `CHAOS_LOUD=1` shows the injected panics too); `CHAOS_STEPS` sets the
//! steps per seed (40 by default).
//!
//! Files: `chaos/world.rs` (the steps), `chaos/script.rs` (what a call
//! will do), `chaos/call.rs` (running it), `chaos/faults.rs` (the faulty
//! dialer, connection and close), `chaos/invariants.rs` (the checks).

#[path = "chaos/call.rs"]
mod call;
#[path = "chaos/faults.rs"]
mod faults;
#[path = "chaos/invariants.rs"]
mod invariants;
#[path = "chaos/regressions.rs"]
mod regressions;
#[path = "chaos/script.rs"]
mod script;
mod support;
#[path = "chaos/world.rs"]
mod world;

use world::World;

/// What a passing seed did: its steps, and how often each fault fired.
#[derive(Debug, PartialEq)]
struct Run {
    trace: Vec<String>,
    fired: std::collections::BTreeMap<&'static str, u64>,
}

fn run_seed(seed: u64) -> Result<Run, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("runtime");
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        runtime.block_on(async {
            let mut world = World::new(seed).await;
            let result = world.run().await;
            // Defuse every fault before the runtime drops what is left.
            world.ctx.switch.stop();
            let trace = std::mem::take(&mut world.trace);
            match result {
                Ok(()) => Ok(Run {
                    trace,
                    fired: world.ctx.switch.counts(),
                }),
                Err(e) => Err((e, trace)),
            }
        })
    }));
    match outcome {
        Ok(Ok(run)) => Ok(run),
        Ok(Err((error, trace))) => {
            let keep = std::env::var("CHAOS_TRACE").map_or(12, |_| usize::MAX);
            let tail = trace.len().saturating_sub(keep);
            Err(format!(
                "{error}\nlast steps:\n  {}",
                trace[tail..].join("\n  ")
            ))
        }
        Err(panic) => Err(panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "the harness panicked".into())),
    }
}

fn seeds() -> std::ops::Range<u64> {
    let var = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    match (var("CHAOS_SEED"), var("CHAOS_SEEDS")) {
        (Some(seed), _) => seed..seed + 1,
        (None, Some(n)) => 0..n,
        (None, None) => 0..200,
    }
}

/// Keeps the injected panics (whose messages start with
/// [`faults::PANIC`]) out of the output; every other panic is reported.
fn quiet_injected_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    if std::env::var_os("CHAOS_LOUD").is_none() {
        ONCE.call_once(quiet);
    }
}

fn quiet() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if !message.starts_with(faults::PANIC) {
            report(info);
        }
    }));
}

#[test]
fn every_seed_holds_the_limits_and_ends_clean() {
    quiet_injected_panics();
    let seeds = seeds();
    let (first, count) = (seeds.start, seeds.end - seeds.start);
    let started = std::time::Instant::now();
    let mut fired = std::collections::BTreeMap::new();
    for seed in seeds {
        match run_seed(seed) {
            Ok(run) => {
                for (what, n) in run.fired {
                    *fired.entry(what).or_insert(0u64) += n;
                }
            }
            Err(failure) => panic!(
                "chaos seed {seed} failed: {failure}\n\
                 replay it: CHAOS_SEED={seed} cargo test -p provider-pools --test chaos"
            ),
        }
    }
    eprintln!(
        "chaos: seeds {first}..{} ({count}) clean in {:?}; faults and events:",
        first + count,
        started.elapsed()
    );
    for (what, n) in fired {
        eprintln!("  {what}: {n}");
    }
}

/// Each of the first 20 seeds (or `CHAOS_SEED`) run twice takes the same
/// steps and observes the same snapshot after each.
#[test]
fn a_seed_replays_identically() {
    quiet_injected_panics();
    let seeds = seeds();
    for seed in seeds.start..seeds.end.min(seeds.start + 20) {
        let first = run_seed(seed).expect("the seed passes");
        let second = run_seed(seed).expect("the seed passes again");
        assert_eq!(first, second, "seed {seed} took another path on replay");
    }
}
