//! Every compile error the intent-rs macros emit, with its `.stderr` snapshot, and pass
//! cases that use every attribute together. Regenerate snapshots with
//! `TRYBUILD=overwrite cargo test -p intent-ui-tests` and review the diff.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/fail/*.rs");
    cases.pass("tests/ui/pass/*.rs");
}
