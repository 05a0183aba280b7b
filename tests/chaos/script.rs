//! What one call will do, drawn from the seed before it starts: its
//! tenant, provider and slot, its work, its dial, how it ends its
//! connection, and where its future is dropped.

use provider_pools::DialErrorKind;

use crate::faults::{CloseFault, DialFault};
use crate::support::rng::Rng;

/// Where a call's future is dropped, if it is.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Cancel {
    Never,
    /// After this much (virtual) time, wherever the call then waits.
    After(u64),
    /// After this many polls.
    Polls(u32),
}

/// What the call does with a granted request before it starts it, and with
/// a running one before it connects.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Work {
    None,
    Sleep(u64),
    /// A panic in the request's own work.
    Panic,
    /// Hands a clone of the running request to a provider job that sleeps
    /// and maybe panics.
    Job {
        ms: u64,
        panic: bool,
    },
}

/// How the call ends its connection.
#[derive(Debug, Clone, Copy)]
pub(crate) enum End {
    Park,
    Drop,
    Close {
        fault: CloseFault,
        wait: bool,
        failed: Failed,
    },
    Panic,
    /// Hands the connection to a provider job that sleeps and maybe panics.
    Job {
        ms: u64,
        panic: bool,
    },
}

/// What the call does with a failed close.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Failed {
    Drop,
    Retry,
    Keep(u64),
}

#[derive(Debug, Clone)]
pub(crate) struct Script {
    pub(crate) session: u64,
    pub(crate) tenant: usize,
    pub(crate) provider: usize,
    pub(crate) slot: usize,
    pub(crate) input: usize,
    pub(crate) output: Option<usize>,
    pub(crate) granted: Work,
    pub(crate) running: Work,
    pub(crate) dial: DialFault,
    pub(crate) bomb: bool,
    pub(crate) hold: u64,
    pub(crate) end: End,
    pub(crate) cancel: Cancel,
}

fn ms(rng: &mut Rng, max: u64) -> u64 {
    rng.below(max + 1)
}

fn work(rng: &mut Rng) -> Work {
    match rng.weighted(&[6, 3, 1, 1]) {
        0 => Work::None,
        1 => Work::Sleep(ms(rng, 1_500)),
        2 => Work::Panic,
        _ => Work::Job {
            ms: ms(rng, 3_000),
            panic: rng.chance(50),
        },
    }
}

fn dial_fault(rng: &mut Rng) -> DialFault {
    const KINDS: [DialErrorKind; 4] = [
        DialErrorKind::Refused,
        DialErrorKind::Timeout,
        DialErrorKind::Handshake,
        DialErrorKind::Saturated,
    ];
    match rng.weighted(&[8, 3, 3, 1, 1]) {
        0 => DialFault::Ok,
        1 => DialFault::Slow(ms(rng, 2_000)),
        2 => DialFault::Fail(KINDS[rng.index(KINDS.len())]),
        3 => DialFault::Never,
        _ => DialFault::Panic,
    }
}

fn close_fault(rng: &mut Rng) -> CloseFault {
    match rng.weighted(&[4, 2, 3, 1, 1]) {
        0 => CloseFault::Ok,
        1 => CloseFault::Slow(ms(rng, 2_000)),
        2 => CloseFault::Fail,
        3 => CloseFault::Never,
        _ => CloseFault::Panic,
    }
}

impl Script {
    pub(crate) fn draw(rng: &mut Rng, session: u64) -> Self {
        let end = match rng.weighted(&[4, 3, 4, 1, 1]) {
            0 => End::Park,
            1 => End::Drop,
            2 => End::Close {
                fault: close_fault(rng),
                wait: rng.chance(70),
                failed: match rng.weighted(&[2, 1, 1]) {
                    0 => Failed::Drop,
                    1 => Failed::Retry,
                    _ => Failed::Keep(ms(rng, 3_000)),
                },
            },
            3 => End::Panic,
            _ => End::Job {
                ms: ms(rng, 2_000),
                panic: rng.chance(50),
            },
        };
        Self {
            session,
            tenant: rng.index(3),
            provider: rng.index(2),
            slot: rng.index(2),
            input: rng.index(600),
            output: rng.chance(30).then(|| rng.index(2_000)),
            granted: if rng.chance(80) {
                Work::None
            } else {
                work(rng)
            },
            running: work(rng),
            dial: dial_fault(rng),
            bomb: rng.chance(10),
            hold: ms(rng, 2_000),
            end,
            cancel: match rng.weighted(&[6, 2, 2]) {
                0 => Cancel::Never,
                1 => Cancel::After(ms(rng, 4_000)),
                _ => Cancel::Polls(1 + rng.below(12) as u32),
            },
        }
    }
}
