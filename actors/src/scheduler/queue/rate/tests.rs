//! The rate's rules on the queue, one behaviour each, on the paused
//! clock: the alarm's part is played by advancing to
//! [`FairQueue::next_token`] and calling [`FairQueue::refill`].

use std::time::Duration;

use tokio::time::Instant;

use super::super::properties::assert_invariants;
use super::super::{Ceilings, FairQueue, Owner, DEFAULT_CLASS};
use super::{Fallback, Rate, RateRefused};

type Q = FairQueue<u32, &'static str, u32>;

/// The one rate-limited provider.
const P: u32 = 7;

fn wide() -> Ceilings {
    Ceilings {
        pending_total: 4096,
        pending_per_tenant: 1024,
        pending_per_provider: 4096,
        running_total: 4096,
        running_per_tenant: 1024,
        running_per_provider: 4096,
    }
}

fn rate(requests: u32, period_ms: u64, burst: u32) -> Rate {
    Rate {
        requests,
        period: Duration::from_millis(period_ms),
        burst,
    }
}

fn limited(r: Rate) -> Q {
    let mut q = Q::new(wide());
    q.configure_rate(Owner::Provider(P), r, 16)
        .expect("a first rate is configured");
    q
}

/// Grants everything ready now, releasing each at once (the running
/// ceilings never bind here); logs (instant, tenant).
fn grant_ready(q: &mut Q, log: &mut Vec<(Instant, &'static str)>) {
    q.refill();
    while let Some(grant) = q.next_grant() {
        assert_invariants(q);
        let (tenant, _) = q.keys(grant.running).expect("a live running key");
        log.push((Instant::now(), *tenant));
        q.release_running(grant.running);
    }
}

/// Advances the paused clock to `at` (not before now).
async fn advance_to(at: Instant) {
    tokio::time::advance(at.saturating_duration_since(Instant::now())).await;
}

/// Asserts that no window [t_i, t_j] of the log holds more than `burst +
/// (t_j - t_i) / interval` grants.
fn assert_within_one_burst(log: &[(Instant, &str)], r: Rate) {
    let interval = r.interval().as_nanos();
    for i in 0..log.len() {
        for j in i..log.len() {
            let span = (log[j].0 - log[i].0).as_nanos();
            let most = u128::from(r.burst) + span / interval;
            let granted = (j - i + 1) as u128;
            assert!(
                granted <= most,
                "{granted} grants within {:?}, more than {most}",
                log[j].0 - log[i].0
            );
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_lone_backlogged_tenant_gets_the_whole_rate_and_never_more_than_one_burst() {
    let r = rate(10, 1_000, 3);
    let mut q = limited(r);
    for i in 0..100 {
        q.push("a", P, i).expect("room");
    }
    let start = Instant::now();
    let end = start + Duration::from_secs(5);
    let mut log = Vec::new();
    grant_ready(&mut q, &mut log);
    while let Some(next) = q.next_token().filter(|&next| next <= end) {
        advance_to(next).await;
        grant_ready(&mut q, &mut log);
    }
    // The burst at once, then one every 100 ms: at 0.1 s, ..., 5 s.
    assert_eq!(log.len(), 3 + 50);
    assert!(log[..3].iter().all(|&(at, _)| at == start));
    for (k, &(at, _)) in log[3..].iter().enumerate() {
        assert_eq!(at - start, Duration::from_millis(100 * (k as u64 + 1)));
    }
    assert_within_one_burst(&log, r);
}

#[tokio::test(start_paused = true)]
async fn a_flooding_tenant_leaves_every_other_tenant_its_max_min_fair_share() {
    // 100 a second; a floods, b and c keep a backlog, d asks 10 a second
    // (less than a fair quarter). Max-min fair: d gets all it asks, the
    // other three split the rest equally.
    let r = rate(100, 1_000, 4);
    let mut q = limited(r);
    let mut item = 0;
    for _ in 0..1_000 {
        item += 1;
        q.push("a", P, item).expect("room");
    }
    for tenant in ["b", "c"] {
        for _ in 0..4 {
            item += 1;
            q.push(tenant, P, item).expect("room");
        }
    }
    let start = Instant::now();
    let end = start + Duration::from_secs(10);
    let mut d_next = start;
    let mut d_asked = 0;
    let mut log = Vec::new();
    loop {
        if Instant::now() >= d_next {
            item += 1;
            q.push("d", P, item).expect("room");
            d_asked += 1;
            d_next += Duration::from_millis(100);
        }
        let before = log.len();
        grant_ready(&mut q, &mut log);
        // b and c keep their backlog: each grant is asked again.
        for &(_, tenant) in &log[before..] {
            if tenant == "b" || tenant == "c" {
                item += 1;
                q.push(tenant, P, item).expect("room");
            }
        }
        let next = q.next_token().map_or(d_next, |token| token.min(d_next));
        if next > end {
            break;
        }
        advance_to(next).await;
    }
    assert_within_one_burst(&log, r);
    let count = |who: &str| log.iter().filter(|&&(_, t)| t == who).count() as f64;
    let (a, b, c, d) = (count("a"), count("b"), count("c"), count("d"));
    assert!(d >= f64::from(d_asked - 1), "d got {d} of {d_asked} asked");
    let fair = (log.len() as f64 - d) / 3.0;
    for (name, share) in [("a", a), ("b", b), ("c", c)] {
        assert!(
            (share - fair).abs() <= 0.02 * fair,
            "{name} got {share}, max-min fair is {fair}"
        );
    }
    let jain = (a + b + c).powi(2) / (3.0 * (a * a + b * b + c * c));
    assert!(jain >= 0.99, "Jain's index {jain} among equal demands");
    // The whole rate was used: the burst plus one per 10 ms.
    assert_eq!(log.len(), 4 + 1_000);
}

#[tokio::test(start_paused = true)]
async fn a_live_lowering_spaces_later_grants_and_revokes_none() {
    let mut q = limited(rate(10, 1_000, 2));
    for i in 0..10 {
        q.push("a", P, i).expect("room");
    }
    let start = Instant::now();
    let first = [q.next_grant(), q.next_grant()].map(|g| g.expect("the burst").running);
    assert!(q.next_grant().is_none(), "the burst is spent");
    assert_eq!(
        q.set_rate(&Owner::Provider(P), rate(20, 1_000, 2), None),
        Err(RateRefused::Raised(rate(10, 1_000, 2))),
        "never above the configured rate"
    );
    assert_eq!(
        q.set_rate(&Owner::Provider(P), rate(10, 1_000, 3), None),
        Err(RateRefused::Raised(rate(10, 1_000, 2))),
        "nor a larger burst"
    );
    q.set_rate(&Owner::Provider(P), rate(2, 1_000, 1), None)
        .expect("a lowering");
    assert_eq!(q.running(), 2, "the grants made stand");
    // The TAT stands at 200 ms (two grants at 10 a second): the next token
    // comes then, and one every 500 ms after it.
    let mut log = Vec::new();
    while log.len() < 3 {
        let next = q.next_token().expect("a provider awaits a token");
        advance_to(next).await;
        grant_ready(&mut q, &mut log);
    }
    let offsets: Vec<_> = log.iter().map(|&(at, _)| at - start).collect();
    assert_eq!(
        offsets,
        [200, 700, 1_200].map(Duration::from_millis),
        "later grants follow the lowered rate"
    );
    for running in first {
        q.release_running(running);
    }
    assert_invariants(&q);
}

#[tokio::test(start_paused = true)]
async fn an_idle_spell_resets_nothing_that_was_granted() {
    let mut q = limited(rate(1, 1_000, 1));
    q.push("a", P, 1).expect("room");
    let grant = q.next_grant().expect("the one token");
    q.release_running(grant.running);
    // The provider's bookkeeping went with its last request...
    assert_eq!(q.provider_counts(&P), (0, 0));
    // ...but its TAT did not: a new request waits for the next token.
    q.push("a", P, 2).expect("room");
    assert!(q.next_grant().is_none());
    assert_eq!(
        q.next_token(),
        Some(Instant::now() + Duration::from_secs(1))
    );
}

#[tokio::test(start_paused = true)]
async fn the_turn_counts_the_requests_of_the_same_line_ahead() {
    let mut q = limited(rate(10, 1_000, 1));
    let now = Instant::now();
    assert_eq!(
        q.rate_turn(&"a", &P, DEFAULT_CLASS).map(|(_, at)| at),
        Some(now)
    );
    q.push("a", P, 1).expect("room");
    let _running = q.next_grant().expect("the token");
    for i in 2..5 {
        q.push("a", P, i).expect("room");
    }
    // Three of a's ahead, each a token 100 ms apart after the next at 100 ms.
    let turn = |q: &Q, tenant| {
        q.rate_turn(&tenant, &P, DEFAULT_CLASS)
            .map(|(_, at)| at - now)
    };
    assert_eq!(turn(&q, "a"), Some(Duration::from_millis(400)));
    // b's line is empty: only the rate's next token is ahead of it.
    assert_eq!(turn(&q, "b"), Some(Duration::from_millis(100)));
    assert_eq!(
        q.rate_turn(&"a", &8, DEFAULT_CLASS),
        None,
        "a provider without a rate"
    );
}

#[test]
fn a_rate_is_configured_once_and_at_most_so_many_providers_have_one() {
    let mut q = Q::new(wide());
    assert_eq!(
        q.set_rate(&Owner::Provider(P), rate(1, 1_000, 1), None),
        Err(RateRefused::Unconfigured)
    );
    q.configure_rate(Owner::Provider(P), rate(5, 1_000, 1), 2)
        .expect("the first");
    assert_eq!(
        q.configure_rate(Owner::Provider(P), rate(1, 1_000, 1), 2),
        Err(RateRefused::Configured(rate(5, 1_000, 1)))
    );
    q.configure_rate(Owner::Provider(8), rate(5, 1_000, 1), 2)
        .expect("the second");
    assert_eq!(
        q.configure_rate(Owner::Provider(9), rate(5, 1_000, 1), 2),
        Err(RateRefused::Full { limit: 2 })
    );
}

#[tokio::test(start_paused = true)]
async fn a_tenants_own_rate_holds_it_and_its_unused_turns_go_to_the_others() {
    // The provider grants 100 a second; a may start 10 a second of its
    // own. Max-min fair: a gets its 10, b and c split the other 90. a's
    // burst of 2 absorbs the wait for the provider's token and its turn
    // in the rotation after each of its own tokens comes (with a burst of
    // 1 that wait would be lost every time, and a would get about 8.4).
    let mut q = limited(rate(100, 1_000, 1));
    q.configure_rate(Owner::Tenant("a"), rate(10, 1_000, 2), 16)
        .expect("a tenant's first rate");
    let mut item = 0;
    for tenant in ["a", "b", "c"] {
        for _ in 0..600 {
            item += 1;
            q.push(tenant, P, item).expect("room");
        }
    }
    let start = Instant::now();
    let end = start + Duration::from_secs(5);
    let mut log = Vec::new();
    grant_ready(&mut q, &mut log);
    while let Some(next) = q.next_token().filter(|&next| next <= end) {
        advance_to(next).await;
        grant_ready(&mut q, &mut log);
    }
    let of = |who: &str| -> Vec<Instant> {
        log.iter()
            .filter(|&&(_, t)| t == who)
            .map(|&(at, _)| at)
            .collect()
    };
    let a = of("a");
    // Its burst, then one per 100 ms until 5 s (each up to two provider
    // tokens late).
    assert!((50..=52).contains(&a.len()), "a got {}", a.len());
    assert_within_one_burst(
        &a.iter().map(|&at| (at, "a")).collect::<Vec<_>>(),
        rate(10, 1_000, 2),
    );
    let (b, c) = (of("b").len() as f64, of("c").len() as f64);
    assert_eq!(log.len(), 1 + 500, "the provider's whole rate was used");
    let fair = (log.len() - a.len()) as f64 / 2.0;
    for share in [b, c] {
        assert!((share - fair).abs() <= 0.02 * fair, "{share} vs {fair}");
    }
    assert_within_one_burst(&log, rate(100, 1_000, 1));
}

#[tokio::test(start_paused = true)]
async fn the_turn_is_the_later_of_the_providers_and_the_tenants() {
    let mut q = limited(rate(10, 1_000, 1));
    q.configure_rate(Owner::Tenant("a"), rate(1, 1_000, 1), 16)
        .expect("a tenant's first rate");
    let now = Instant::now();
    q.push("a", P, 1).expect("room");
    let running = q.next_grant().expect("both tokens ready");
    let turn = |q: &Q, tenant| {
        q.rate_turn(&tenant, &P, DEFAULT_CLASS)
            .map(|(r, at)| (r, at - now))
    };
    // a's own rate sets its turn; b only waits for the provider's.
    assert_eq!(
        turn(&q, "a"),
        Some((rate(1, 1_000, 1), Duration::from_secs(1)))
    );
    assert_eq!(
        turn(&q, "b"),
        Some((rate(10, 1_000, 1), Duration::from_millis(100)))
    );
    q.release_running(running.running);
    // a went idle: its TAT stays.
    assert_eq!(q.tenant_counts(&"a"), (0, 0));
    assert_eq!(
        turn(&q, "a"),
        Some((rate(1, 1_000, 1), Duration::from_secs(1)))
    );
    assert_eq!(
        q.set_rate(&Owner::Tenant("a"), rate(2, 1_000, 1), None),
        Err(RateRefused::Raised(rate(1, 1_000, 1)))
    );
}

#[tokio::test(start_paused = true)]
async fn a_rate_held_until_an_instant_falls_back_by_the_clock_alone() {
    let mut q = limited(rate(100, 1_000, 1));
    let start = Instant::now();
    let fallback = Fallback {
        until: start + Duration::from_secs(1),
        then: rate(10, 1_000, 1),
    };
    assert_eq!(
        q.set_rate(
            &Owner::Provider(P),
            rate(100, 1_000, 1),
            Some(Fallback {
                then: rate(100, 1_000, 2),
                ..fallback
            })
        ),
        Err(RateRefused::FallbackAbove(rate(100, 1_000, 2))),
        "a fallback never above the rate it follows"
    );
    q.set_rate(&Owner::Provider(P), rate(100, 1_000, 1), Some(fallback))
        .expect("a share with its fallback");
    for i in 0..200 {
        q.push("a", P, i).expect("room");
    }
    let end = start + Duration::from_secs(2);
    let mut log = Vec::new();
    grant_ready(&mut q, &mut log);
    while let Some(next) = q.next_token().filter(|&next| next <= end) {
        advance_to(next).await;
        grant_ready(&mut q, &mut log);
    }
    let before = log.iter().filter(|&&(at, _)| at < fallback.until).count();
    // 100 a second until 1 s (0, 10 ms, ..., 990 ms), then 10 a second
    // (1 s, 1.1 s, ..., 2 s): no call was needed for the fallback.
    assert_eq!((before, log.len() - before), (100, 11));
    assert_within_one_burst(&log[before..], rate(10, 1_000, 1));
    assert_eq!(
        q.rate_reading(&Owner::Provider(P)).map(|r| r.rate),
        Some(rate(10, 1_000, 1))
    );
}
