//! 2-D kernels: `#[nested_reduce(columns = k)]` on
//! `fn spmm(row: usize, j: usize, .., k: u32, y: &mut [f32])`.
//!
//! A 2-D kernel computes element `(row, j)` of a row-major output matrix of
//! `k` columns: its fine-task range depends on the row only, and its map,
//! fold and epilogue may read the column index `j` too (`x[col[e] as usize *
//! k as usize + j]`). The front end turns it into the ordinary kernel over
//! the *flattened* tasks `t = row·k + j` that the rest of the pipeline
//! compiles: the two indices become the prologue's first bindings,
//! `let row = t / (k as usize); let j = t % (k as usize);`, and the output
//! element `y[row * k as usize + j]` becomes `y[t]`, which owner-computes
//! accepts. Consecutive flattened tasks are consecutive columns of one row,
//! which is what makes a warp's gathers of `x` coalesced on the GPU.
//!
//! The rules checked here, each a spanned error: the first two parameters
//! are the row and column indices, both `usize`; `columns` names a `u32` or
//! `u64` scalar parameter; outputs are read and written only at
//! `out[row * k as usize + j]`; the prologue and the range do not read `j`
//! (a row's fine tasks are the same for all its columns, so that a launch
//! may read them once per row); the three names are not rebound.

use crate::diag::{Errors, SourceRange};
use crate::ir::Ty;
use crate::parse::scalar_type;
use proc_macro2::{Ident, Span, TokenStream, TokenTree};
use syn::visit::Visit;
use syn::visit_mut::VisitMut;
use syn::{Expr, FnArg, Pat, Type};

/// The flattened task index of the kernel the pipeline compiles. Users
/// cannot name it: it exists only in the flattened function.
pub const TASK: &str = "wf_task";

/// `columns = k` of the attribute.
pub struct ColumnsAttr {
    /// The scalar parameter holding the column count.
    pub count: Ident,
}

/// Splits `columns = <ident>` off the attribute's comma-separated entries;
/// the rest (a generic kernel's type lists) is returned as written.
pub fn take(attr: TokenStream) -> syn::Result<(Option<ColumnsAttr>, TokenStream)> {
    let mut entries: Vec<Vec<TokenTree>> = vec![Vec::new()];
    for tt in attr {
        match &tt {
            TokenTree::Punct(p) if p.as_char() == ',' => entries.push(Vec::new()),
            _ => entries.last_mut().expect("one entry at least").push(tt),
        }
    }
    let mut found: Option<ColumnsAttr> = None;
    let mut rest: Vec<Vec<TokenTree>> = Vec::new();
    for entry in entries {
        let is_columns = matches!(entry.first(), Some(TokenTree::Ident(i)) if i == "columns")
            && matches!(entry.get(1), Some(TokenTree::Punct(p)) if p.as_char() == '=');
        if !is_columns {
            rest.push(entry);
            continue;
        }
        let count = match entry.as_slice() {
            [_, _, TokenTree::Ident(count)] => count.clone(),
            _ => {
                let ts: TokenStream = entry.iter().cloned().collect();
                return Err(SourceRange::of(&ts).error(
                    "`columns` names the scalar parameter that holds the column count, as in `#[nested_reduce(columns = k)]`",
                ));
            }
        };
        if found.is_some() {
            return Err(syn::Error::new(
                count.span(),
                "`columns` is given twice; name the column count once",
            ));
        }
        found = Some(ColumnsAttr { count });
    }
    // Entries rejoined with commas; a trailing comma leaves an empty one.
    let mut out = TokenStream::new();
    let rest: Vec<_> = rest.into_iter().filter(|e| !e.is_empty()).collect();
    for (i, e) in rest.into_iter().enumerate() {
        if i > 0 {
            out.extend([TokenTree::Punct(proc_macro2::Punct::new(
                ',',
                proc_macro2::Spacing::Alone,
            ))]);
        }
        out.extend(e);
    }
    Ok((found, out))
}

/// The flattened kernel and where its column count is.
pub struct Flattened {
    pub item: syn::ItemFn,
    /// The column count's position among the flattened kernel's parameters
    /// after its task index (as `ir::Kernel::params` counts them).
    pub count_param: usize,
}

/// The names a 2-D kernel's rules are about.
struct Names {
    row: Ident,
    col: Ident,
    count: Ident,
    /// `count` is `usize`-typed after `as usize` only (a `u32` or `u64`).
    outputs: Vec<Ident>,
}

/// The 2-D kernel `item` as the flattened 1-D kernel (module docs).
pub fn flatten(item: &syn::ItemFn, attr: &ColumnsAttr) -> syn::Result<Flattened> {
    let mut errs = Errors::default();
    let names = signature(item, attr, &mut errs);
    errs.finish()?;
    let (names, count_param) = names.expect("no errors, so the signature was read");
    let mut errs = Errors::default();
    check_rebinding(item, &names, &mut errs);
    check_range(item, &names, &mut errs);
    let mut body = (*item.block).clone();
    let mut rewrite = OutputIndex {
        names: &names,
        errs: &mut errs,
    };
    rewrite.visit_block_mut(&mut body);
    errs.finish()?;

    let task = Ident::new(TASK, Span::call_site());
    let (row, col, count) = (&names.row, &names.col, &names.count);
    let head: Vec<syn::Stmt> = vec![
        syn::parse_quote!(let #row = #task / (#count as usize);),
        syn::parse_quote!(let #col = #task % (#count as usize);),
    ];
    body.stmts.splice(0..0, head);
    let mut flat = item.clone();
    let rest: Vec<FnArg> = item.sig.inputs.iter().skip(2).cloned().collect();
    let task_arg: FnArg = syn::parse_quote!(#task: usize);
    flat.sig.inputs = std::iter::once(task_arg).chain(rest).collect();
    flat.block = Box::new(body);
    Ok(Flattened {
        item: flat,
        count_param,
    })
}

fn param_name(arg: &FnArg) -> Option<(&Ident, &Type)> {
    match arg {
        FnArg::Typed(pt) => match &*pt.pat {
            Pat::Ident(pi) => Some((&pi.ident, &pt.ty)),
            _ => None,
        },
        FnArg::Receiver(_) => None,
    }
}

/// The row and column indices, the column count and the outputs, checked.
fn signature(item: &syn::ItemFn, attr: &ColumnsAttr, errs: &mut Errors) -> Option<(Names, usize)> {
    let inputs: Vec<&FnArg> = item.sig.inputs.iter().collect();
    let mut index = |i: usize, what: &str| -> Option<Ident> {
        let found = inputs.get(i).and_then(|a| param_name(a));
        match found {
            Some((name, ty)) if scalar_type(ty) == Some(Ty::Usize) => Some(name.clone()),
            Some((_, ty)) => {
                errs.push(SourceRange::of(ty).error(format!(
                    "the {what} index of a kernel with `columns` has type `usize`"
                )));
                None
            }
            None => {
                let at = inputs
                    .get(i)
                    .map_or_else(|| SourceRange::of(&item.sig.ident), SourceRange::of);
                errs.push(at.error(
                    "a kernel with `columns` takes the row index and the column index as its first two parameters, `row: usize, j: usize`",
                ));
                None
            }
        }
    };
    let row = index(0, "row");
    let col = index(1, "column");
    let mut count_param = None;
    let mut outputs = Vec::new();
    for (i, arg) in inputs.iter().enumerate().skip(2) {
        let Some((name, ty)) = param_name(arg) else {
            continue;
        };
        if let Type::Reference(r) = ty {
            if r.mutability.is_some() {
                outputs.push(name.clone());
            }
        }
        if *name == attr.count {
            match scalar_type(ty) {
                Some(Ty::U32 | Ty::U64) => count_param = Some(i - 2),
                _ => errs.push(SourceRange::of(ty).error(format!(
                    "the column count `{name}` is a `u32` or `u64` scalar parameter"
                ))),
            }
            continue;
        }
    }
    let known = inputs
        .iter()
        .filter_map(|a| param_name(a))
        .any(|(n, _)| *n == attr.count);
    if !known {
        errs.push(syn::Error::new(
            attr.count.span(),
            format!(
                "`columns = {0}` names the scalar parameter holding the column count, and `{1}` has no parameter `{0}`",
                attr.count, item.sig.ident
            ),
        ));
    }
    let (row, col, count_param) = (row?, col?, count_param?);
    Some((
        Names {
            row,
            col,
            count: attr.count.clone(),
            outputs,
        },
        count_param,
    ))
}

/// Whether `e` is the identifier `name` (in parentheses or not).
fn is_ident(e: &Expr, name: &Ident) -> bool {
    match e {
        Expr::Paren(p) => is_ident(&p.expr, name),
        Expr::Path(p) => p.qself.is_none() && p.path.is_ident(name),
        _ => false,
    }
}

/// `k as usize` (in parentheses or not).
fn is_count(e: &Expr, n: &Names) -> bool {
    match e {
        Expr::Paren(p) => is_count(&p.expr, n),
        Expr::Cast(c) => is_ident(&c.expr, &n.count) && scalar_type(&c.ty) == Some(Ty::Usize),
        _ => false,
    }
}

/// `row * k as usize + j`, either operand order of `*` and `+`.
fn is_element(e: &Expr, n: &Names) -> bool {
    let row_times_k = |e: &Expr| match e {
        Expr::Binary(b) if matches!(b.op, syn::BinOp::Mul(_)) => {
            (is_ident(&b.left, &n.row) && is_count(&b.right, n))
                || (is_count(&b.left, n) && is_ident(&b.right, &n.row))
        }
        _ => false,
    };
    match e {
        Expr::Paren(p) => is_element(&p.expr, n),
        Expr::Binary(b) if matches!(b.op, syn::BinOp::Add(_)) => {
            let (l, r) = (strip(&b.left), strip(&b.right));
            (row_times_k(l) && is_ident(r, &n.col)) || (is_ident(l, &n.col) && row_times_k(r))
        }
        _ => false,
    }
}

fn strip(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => strip(&p.expr),
        e => e,
    }
}

/// Rewrites every output index `row * k as usize + j` to the flattened
/// task; any other index of an output is an error.
struct OutputIndex<'a> {
    names: &'a Names,
    errs: &'a mut Errors,
}

impl VisitMut for OutputIndex<'_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        if let Expr::Index(ix) = e {
            let out = self
                .names
                .outputs
                .iter()
                .find(|o| is_ident(&ix.expr, o))
                .cloned();
            if let Some(out) = out {
                if is_element(&ix.index, self.names) {
                    let task = Ident::new(TASK, Span::call_site());
                    *ix.index = syn::parse_quote!(#task);
                } else {
                    let n = self.names;
                    self.errs.push(SourceRange::of(&ix.index).error(format!(
                        "owner-computes in a kernel with `columns = {k}`: output `{out}` holds a row-major matrix of `{k}` columns and is read and written only at the task's element, `{out}[{r} * {k} as usize + {c}]`",
                        k = n.count,
                        r = n.row,
                        c = n.col
                    )));
                }
                return;
            }
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }
}

/// Every binding of the row, column or count names in the body is an
/// error: the rules above read them by name.
fn check_rebinding(item: &syn::ItemFn, n: &Names, errs: &mut Errors) {
    struct Binds<'a> {
        n: &'a Names,
        errs: &'a mut Errors,
    }
    impl<'ast> Visit<'ast> for Binds<'_> {
        fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
            let what = if p.ident == self.n.row {
                Some("the row index")
            } else if p.ident == self.n.col {
                Some("the column index")
            } else if p.ident == self.n.count {
                Some("the column count")
            } else {
                None
            };
            if let Some(what) = what {
                self.errs.push(syn::Error::new(
                    p.ident.span(),
                    format!(
                        "`{}` rebinds {what} of a kernel with `columns`: choose another name",
                        p.ident
                    ),
                ));
            }
            syn::visit::visit_pat_ident(self, p);
        }
    }
    Binds { n, errs }.visit_block(&item.block);
}

/// The nested pattern's range `(lo..hi)`: the receiver of the first
/// `.map`, `.any`, `.all` or `.for_each` called on a range, and the index
/// of the statement holding it.
fn nested_range(block: &syn::Block) -> Option<(usize, &syn::ExprRange)> {
    struct Find<'a> {
        found: Option<&'a syn::ExprRange>,
    }
    impl<'ast> Visit<'ast> for Find<'ast> {
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            if self.found.is_none()
                && ["map", "any", "all", "for_each"].contains(&m.method.to_string().as_str())
            {
                if let Expr::Range(r) = strip(&m.receiver) {
                    self.found = Some(r);
                    return;
                }
            }
            syn::visit::visit_expr_method_call(self, m);
        }
    }
    block.stmts.iter().enumerate().find_map(|(i, s)| {
        let mut f = Find { found: None };
        f.visit_stmt(s);
        f.found.map(|r| (i, r))
    })
}

/// The prologue and the range must not read the column index.
fn check_range(item: &syn::ItemFn, n: &Names, errs: &mut Errors) {
    struct Uses<'a> {
        col: &'a Ident,
        errs: &'a mut Errors,
        what: &'static str,
    }
    impl<'ast> Visit<'ast> for Uses<'_> {
        fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
            if p.qself.is_none() && p.path.is_ident(self.col) {
                self.errs.push(SourceRange::of(p).error(format!(
                    "{} of a kernel with `columns` depends on the row only, and reads the column index `{}`: a row's fine tasks are the same for every column, so that a launch reads them once per row; read `{}` in the map, the fold or after it",
                    self.what, self.col, self.col
                )));
            }
            syn::visit::visit_expr_path(self, p);
        }
    }
    let Some((at, range)) = nested_range(&item.block) else {
        return;
    };
    let mut uses = Uses {
        col: &n.col,
        errs,
        what: "the prologue",
    };
    for s in &item.block.stmts[..at] {
        uses.visit_stmt(s);
    }
    uses.what = "the fine-task range";
    if let Some(lo) = &range.start {
        uses.visit_expr(lo);
    }
    if let Some(hi) = &range.end {
        uses.visit_expr(hi);
    }
}
