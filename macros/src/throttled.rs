//! `#[throttled(..)]` under `#[nested_reduce]`: the attribute's typed model
//! and its validation, with spanned errors. `#[nested_reduce]` takes it off
//! the function (it never expands on its own: above `#[nested_reduce]` or
//! alone it is an error saying where it goes).

use proc_macro2::Span;
use syn::spanned::Spanned;

/// The policies `ThrottlePolicy` parses (runtime `schedule::options`).
const POLICIES: [&str; 7] = ["auto", "cf", "cfq", "sj", "sjq", "org", "org_r"];
/// The partitioners `Partitioner` parses.
const PARTITIONERS: [&str; 3] = ["kd", "bisect", "columns"];

/// `#[throttled(policy = .., cache = .., partitioner = ..)]`: the defaults
/// of the kernel's `throttle_options()`; each `None` keeps
/// `ThrottleOptions::default()`'s.
pub struct ThrottleAttr {
    /// The attribute, for errors about the kernel as a whole.
    pub attr: syn::Attribute,
    pub policy: Option<String>,
    /// `l2` or a byte size (`"8MiB"`), as `CacheSize` parses it.
    pub cache: Option<String>,
    pub partitioner: Option<String>,
}

/// Whether `attr` is `#[throttled]` (any path ending in `throttled`).
fn is_throttled(attr: &syn::Attribute) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|s| s.ident == "throttled")
}

/// Takes `#[throttled(..)]` off `item` and parses it; `None` without one.
pub fn take(item: &mut syn::ItemFn) -> syn::Result<Option<ThrottleAttr>> {
    let mut found = None;
    let mut kept = Vec::new();
    for attr in std::mem::take(&mut item.attrs) {
        if is_throttled(&attr) {
            if found.is_some() {
                return Err(syn::Error::new_spanned(
                    &attr,
                    "`#[throttled]` is given twice; write it once",
                ));
            }
            found = Some(parse(&attr)?);
        } else {
            kept.push(attr);
        }
    }
    item.attrs = kept;
    Ok(found)
}

fn parse(attr: &syn::Attribute) -> syn::Result<ThrottleAttr> {
    let mut out = ThrottleAttr {
        attr: attr.clone(),
        policy: None,
        cache: None,
        partitioner: None,
    };
    if matches!(attr.meta, syn::Meta::Path(_)) {
        return Ok(out);
    }
    attr.parse_nested_meta(|meta| {
        let key = meta
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        if !["policy", "partitioner", "cache"].contains(&key.as_str()) {
            return Err(syn::Error::new(
                meta.path.span(),
                "unknown `#[throttled]` argument: expected `policy`, `cache` or `partitioner`",
            ));
        }
        let value = meta.value()?;
        // An identifier (`cf`, `l2`) or a string (`"8MiB"`).
        let (text, span) = if value.peek(syn::LitStr) {
            let s: syn::LitStr = value.parse()?;
            (s.value(), s.span())
        } else {
            let i: syn::Ident = value.parse()?;
            (i.to_string(), i.span())
        };
        let slot = match key.as_str() {
            "policy" => {
                check_one_of(&text, &POLICIES, "policy", span)?;
                &mut out.policy
            }
            "partitioner" => {
                check_one_of(&text, &PARTITIONERS, "partitioner", span)?;
                &mut out.partitioner
            }
            _ => {
                check_cache(&text, span)?;
                &mut out.cache
            }
        };
        if slot.is_some() {
            return Err(syn::Error::new(
                meta.path.span(),
                format!("`{key}` is given twice"),
            ));
        }
        *slot = Some(text.to_ascii_lowercase());
        Ok(())
    })?;
    Ok(out)
}

fn check_one_of(text: &str, allowed: &[&str], what: &str, span: Span) -> syn::Result<()> {
    if allowed.contains(&text.to_ascii_lowercase().as_str()) {
        Ok(())
    } else {
        Err(syn::Error::new(
            span,
            format!(
                "unknown throttling {what} `{text}`: expected one of {}",
                allowed.join(", ")
            ),
        ))
    }
}

/// `l2`, or digits with an optional unit (`B`, `KB`, `KiB`, `MB`, `MiB`,
/// `GB`, `GiB`, any case), not zero: what `CacheSize` parses.
fn check_cache(text: &str, span: Span) -> syn::Result<()> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("l2") {
        return Ok(());
    }
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    let unit = t[digits..].trim().to_ascii_lowercase();
    let units = ["", "b", "kb", "kib", "mb", "mib", "gb", "gib", "tb", "tib"];
    let value: Option<u64> = t[..digits].parse().ok();
    if digits > 0 && units.contains(&unit.as_str()) && value.is_some_and(|v| v > 0) {
        Ok(())
    } else {
        Err(syn::Error::new(
            span,
            format!("`cache = \"{text}\"` is not a cache size: expected `l2` or a size such as \"8MiB\", \"512KiB\" or \"50MB\""),
        ))
    }
}
