//! The control plane's V1 response bodies, decoded as the HTTP client does
//! (`serde_json::from_slice` into the public `v1::protocol` types and
//! `LeaseGrant`), and error envelopes turned into typed errors and back.
//! Never a panic; an envelope that names an error re-encodes to the same
//! code, and the status of that code is a valid HTTP status.
#![no_main]

use libfuzzer_sys::fuzz_target;
use provider_pools_control_plane::v1::protocol::{
    status_of, Done, ErrorEnvelope, Instances, LeaseRead,
};
use provider_pools_control_plane::LeaseGrant;

fuzz_target!(|body: &[u8]| {
    if let Ok(instances) = serde_json::from_slice::<Instances>(body) {
        // What was accepted re-encodes and decodes to the same value.
        let again = serde_json::to_vec(&instances).expect("encode instances");
        assert_eq!(
            serde_json::from_slice::<Instances>(&again).expect("decode again"),
            instances
        );
    }
    if let Ok(read) = serde_json::from_slice::<LeaseRead>(body) {
        let again = serde_json::to_vec(&read).expect("encode lease read");
        assert_eq!(
            serde_json::from_slice::<LeaseRead>(&again).expect("decode again"),
            read
        );
    }
    if let Ok(grant) = serde_json::from_slice::<LeaseGrant>(body) {
        let again = serde_json::to_vec(&grant).expect("encode grant");
        assert_eq!(
            serde_json::from_slice::<LeaseGrant>(&again).expect("decode again"),
            grant
        );
    }
    let _ = serde_json::from_slice::<Done>(body);
    if let Ok(envelope) = serde_json::from_slice::<ErrorEnvelope>(body) {
        let code = envelope.error.code.clone();
        if let Ok(error) = envelope.error.into_error() {
            let _ = error.to_string();
            let status = status_of(error.code());
            assert!((100..=599).contains(&status), "status {status} for {code}");
            let back = ErrorEnvelope::of(&error);
            assert_eq!(back.error.code, code, "{error:?}");
            let encoded = serde_json::to_vec(&back).expect("encode envelope");
            let decoded =
                serde_json::from_slice::<ErrorEnvelope>(&encoded).expect("an envelope decodes");
            assert_eq!(
                decoded.error.into_error().map(|e| e.code()),
                Ok(error.code())
            );
        }
    }
});
