//! `planner::validate` on any bytes: never panics; a refusal always names a problem; a
//! document it accepts serializes to bytes it accepts again, as the same document.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match planner::validate(data) {
        Err(invalid) => assert!(!invalid.problems.is_empty(), "a refusal names a problem"),
        Ok(document) => {
            let bytes = serde_json::to_vec(&document).expect("a document serializes");
            assert_eq!(
                planner::validate(&bytes).as_ref(),
                Ok(&document),
                "a valid document round-trips"
            );
        }
    }
});
