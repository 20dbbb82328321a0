//! Compile-time behaviour of `#[nested_reduce]` and `#[device_fn]`: every
//! rule of the kernel language has a compile-fail case whose diagnostic is
//! checked against `tests/ui/*.stderr`; `tests/ui/pass` must compile and run.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
