//! Compile-time behaviour of `#[nested_reduce]` and `#[device_fn]`: every
//! rule of the kernel language has a compile-fail case whose diagnostic is
//! checked against `tests/ui/*.stderr`; `tests/ui/pass` must compile and run.
//! `tests/ui/surface` holds what must not be nameable from a user's crate:
//! internals of the device crate, the generated-code contract outside its
//! hidden path, second paths to a type, the apps' tuning constants.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    t.pass("tests/ui/pass/*.rs");
}

#[test]
fn internals_are_not_nameable() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/surface/*.rs");
}
