//! Attribute macros of warpfit. See the `warpfit` crate for documentation.
use proc_macro::TokenStream;

#[proc_macro_attribute]
pub fn nested_reduce(_attr: TokenStream, item: TokenStream) -> TokenStream {
    item
}

#[proc_macro_attribute]
pub fn device_fn(_attr: TokenStream, item: TokenStream) -> TokenStream {
    item
}
