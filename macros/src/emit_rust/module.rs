//! The `pub mod NAME { .. }` companion of a kernel, one method per generated
//! item: the device function checks, `CUDA_SOURCE`/`GATHERED`/`SPEC`, the
//! twin's argument struct and output accessors, the twin (`NestedKernel`),
//! the gather description, `launch`/`launch_with`, `prepare` and `work_graph`.

use super::{
    call_checks, call_const, call_consts, companion, distinct_callees, fault, plumbing, prim, ty,
    uses, Emitter,
};
use crate::analyse::Access;
use crate::ir::{Kernel, LocalId, Param, ParamKind, Reduce, Ty};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use std::collections::BTreeSet;

/// The companion of a kernel.
/// `extra`: items added by other attributes (`#[throttled]`'s).
pub fn module(
    k: &Kernel,
    access: &Access,
    vis: &syn::Visibility,
    cuda: &str,
    extra: TokenStream,
) -> TokenStream {
    let module = ModuleEmitter {
        k,
        access,
        checked: Emitter {
            locals: &k.locals,
            params: &k.params,
            prechecked: None,
        },
    };
    module.module(vis, cuda, extra)
}

struct ModuleEmitter<'a> {
    k: &'a Kernel,
    access: &'a Access,
    /// Expressions with every load checked.
    checked: Emitter<'a>,
}

/// `Result<t, Fault>`.
fn result(t: TokenStream) -> TokenStream {
    let f = fault();
    quote!(::core::result::Result<#t, #f>)
}

/// The hygienic names of the twin's method parameters.
struct Plumbing {
    task: proc_macro2::Ident,
    ctx: proc_macro2::Ident,
    acc: proc_macro2::Ident,
    fine: proc_macro2::Ident,
    lo: proc_macro2::Ident,
    hi: proc_macro2::Ident,
}

fn plumbing_names() -> Plumbing {
    Plumbing {
        task: plumbing("__task"),
        ctx: plumbing("__ctx"),
        acc: plumbing("__acc"),
        fine: plumbing("__k"),
        lo: plumbing("__lo"),
        hi: plumbing("__hi"),
    }
}

impl ModuleEmitter<'_> {
    fn module(&self, vis: &syn::Visibility, cuda: &str, extra: TokenStream) -> TokenStream {
        let name = &self.k.name;
        let mod_doc = format!(
            "Launch API and generated code of the `#[nested_reduce]` kernel `fn {name}`.\n\n\
             The function itself stays the plain-Rust reference; [`launch`] runs it on a `Device` \
             (CUDA when available, else the CPU twin [`Kernel`]). Integer arithmetic follows Rust's \
             release semantics on every backend: `+ - *` wrap, shifts are masked, `/` and `%` by zero \
             fail the launch with `Error::DivisionByZero`, and every index is checked."
        );
        let mod_doc = if self.k.elementwise {
            format!(
                "{mod_doc}\n\n`{name}` is a per-task map (its body has no nested pattern): the body runs once \
                 per task, on CUDA one thread per task whatever the `LaunchConfig` says. A task list's \
                 segments must be empty, `(task, 0, 0)`; each task it names runs once."
            )
        } else {
            mod_doc
        };
        let device_fn_checks = call_checks(&self.k.calls);
        let call_consts = call_consts(&self.k.calls);
        let gathered = self.gathered_const();
        let spec = self.spec();
        let arguments = self.arguments();
        let accessors = self.accessors();
        let twin = self.twin();
        let gather_impl = self.gather_impl();
        let launch = self.launch();
        let prepare = self.prepare();
        let work_graph = self.work_graph();
        quote! {
            #[doc = #mod_doc]
            #[allow(clippy::all, clippy::pedantic, unused_parens, unused_braces)]
            #vis mod #name {
                #[allow(unused_imports)]
                use super::*;

                #device_fn_checks
                #call_consts

                /// Generated CUDA C++ for this kernel: the functor of `docs/codegen.md`.
                pub const CUDA_SOURCE: &str = #cuda;

                #gathered

                #spec

                #arguments

                #accessors

                #twin

                #gather_impl

                #launch

                #prepare

                #work_graph

                #extra
            }
        }
    }

    /// `GATHERED`: the arrays throttling reads through an index array.
    fn gathered_const(&self) -> TokenStream {
        let value = match &self.access.throttle {
            Ok(t) => {
                let names = gathered_names(self.k, t);
                quote!(::core::option::Option::Some(#names))
            }
            Err(_) => quote!(::core::option::Option::None),
        };
        quote! {
            /// The arrays the map reads through its one gathered index (`"x"`; `"rank, inv_deg"`
            /// for several), when a work graph can describe it.
            pub const GATHERED: ::core::option::Option<&'static str> = #value;
        }
    }

    /// `SPEC`: what the device layer needs to compile and launch the kernel.
    fn spec(&self) -> TokenStream {
        let k = self.k;
        let name = k.name.to_string();
        let device_fns = distinct_callees(&k.calls).into_iter().map(|path| {
            let source = companion(path, Some("SOURCE"));
            quote!(&#source)
        });
        let params = k.params.iter().map(|p| {
            let n = p.name.to_string();
            let t = format_ident!(
                "{}",
                p.ty.scalar_variant().expect("params are scalar types")
            );
            let kind = format_ident!(
                "{}",
                match p.kind {
                    ParamKind::Input => "Input",
                    ParamKind::Output => "Output",
                    ParamKind::Scalar => "Scalar",
                    ParamKind::Shared => "Shared",
                    ParamKind::Worklist => "Worklist",
                }
            );
            quote!(::warpfit::__private::ParamSpec {
                name: #n,
                ty: ::warpfit::__private::ScalarType::#t,
                kind: ::warpfit::__private::ParamKind::#kind,
            })
        });
        let scalar = |t: Ty| {
            let v = format_ident!("{}", t.scalar_variant().expect("checked in lower"));
            quote!(::warpfit::__private::ScalarType::#v)
        };
        let acc = match k.acc.tuple() {
            Some(t) => {
                let elems = t.elems().map(scalar);
                quote!(::warpfit::__private::AccType::Tuple(&[#(#elems),*]))
            }
            None => {
                let t = scalar(k.acc);
                quote!(::warpfit::__private::AccType::Scalar(#t))
            }
        };
        let elementwise = k.elementwise;
        let donates = k.donates();
        let checks_at_end_columns = crate::column_checks::at_end_columns(k);
        let columns = match k.columns {
            Some(c) => quote!(::core::option::Option::Some(#c)),
            None => quote!(::core::option::Option::None),
        };
        quote! {
            /// Parameter roles, types and the accumulator type, for the device layer.
            pub static SPEC: ::warpfit::__private::KernelSpec = ::warpfit::__private::KernelSpec {
                name: #name,
                cuda_source: CUDA_SOURCE,
                device_fns: &[#(#device_fns),*],
                params: &[#(#params),*],
                acc: #acc,
                elementwise: #elementwise,
                donates: #donates,
                index_encoding: ::warpfit::__private::IndexEncoding::Plain,
                columns: #columns,
                checks_at_end_columns: #checks_at_end_columns,
            };
        }
    }

    /// `Ctx` (prologue bindings the later phases read) and `Kernel` (the
    /// twin's borrowed arguments).
    fn arguments(&self) -> TokenStream {
        let k = self.k;
        let ctx_fields = k.ctx.iter().map(|id| {
            let n = self.checked.local(*id);
            let t = ty(k.locals[*id].ty);
            quote!(pub #n: #t)
        });
        let fields = k.params.iter().map(|p| {
            let (n, t) = (&p.name, ty(p.ty));
            match p.kind {
                ParamKind::Input => quote!(pub #n: &'a [#t]),
                ParamKind::Output => quote!(pub #n: ::warpfit::__private::SharedOut<'a, #t>),
                ParamKind::Scalar => quote!(pub #n: #t),
                ParamKind::Shared => quote!(pub #n: &'a [::warpfit::__private::Atomic<#t>]),
                ParamKind::Worklist => quote!(pub #n: &'a ::warpfit::__private::Worklist),
            }
        });
        quote! {
            /// Prologue bindings that the fold and the epilogue read.
            #[derive(Debug, Clone, Copy)]
            pub struct Ctx { #(#ctx_fields),* }

            /// The CPU twin: borrowed arguments, outputs behind `SharedOut`.
            pub struct Kernel<'a> { #(#fields),* }
        }
    }

    /// Output accessors: the one place with `unsafe`.
    fn accessors(&self) -> TokenStream {
        let accessors = self
            .k
            .params
            .iter()
            .filter(|p| p.kind == ParamKind::Output)
            .map(|p| {
                let (n, t) = (&p.name, ty(p.ty));
                let s = n.to_string();
                let get = format_ident!("__wf_get_{}", n, span = Span::mixed_site());
                let set = format_ident!("__wf_set_{}", n, span = Span::mixed_site());
                let (i, v) = (plumbing("__i"), plumbing("__v"));
                let r = result(t.clone());
                let ru = result(quote!(()));
                quote! {
                    #[inline]
                    #[doc = concat!("Reads `", #s, "[task]`.")]
                    #[doc = ""]
                    #[doc = "SAFETY (of the `unsafe` block): `#[nested_reduce]` checked the owner-computes rule, so only"]
                    #[doc = "the task that owns index `i` reads or writes element `i` during a launch, and every"]
                    #[doc = "executor calls this with the task it runs: no other thread touches the element."]
                    fn #get(&self, #i: ::core::primitive::usize) -> #r {
                        unsafe { self.#n.get(#i, #s) }
                    }
                    #[inline]
                    #[doc = concat!("Writes `", #s, "[task]`; SAFETY as for the read accessor (owner-computes).")]
                    fn #set(&self, #i: ::core::primitive::usize, #v: #t) -> #ru {
                        unsafe { self.#n.set(#i, #v, #s) }
                    }
                }
            });
        quote! {
            impl Kernel<'_> {
                #(#accessors)*
            }
        }
    }

    /// The bindings a twin method starts with: the task index and the
    /// context fields it reads.
    fn bind(&self, used: &BTreeSet<LocalId>, with_ctx: bool) -> TokenStream {
        let k = self.k;
        let names = plumbing_names();
        let (task_h, ctx_h) = (&names.task, &names.ctx);
        let mut out = TokenStream::new();
        if used.contains(&k.task) {
            let n = self.checked.local(k.task);
            out.extend(quote!(let #n: ::core::primitive::usize = #task_h;));
        }
        if with_ctx {
            let ctx_set: BTreeSet<LocalId> = k.ctx.iter().copied().collect();
            for id in used.intersection(&ctx_set) {
                let n = self.checked.local(*id);
                let t = ty(k.locals[*id].ty);
                out.extend(quote!(let #n: #t = #ctx_h.#n;));
            }
        }
        out
    }

    /// The twin: `impl NestedKernel for Kernel`.
    fn twin(&self) -> TokenStream {
        let k = self.k;
        let name = k.name.to_string();
        let acc_t = ty(k.acc);
        let methods = [
            self.twin_prologue(),
            self.twin_init(),
            self.twin_map(),
            self.twin_precheck(),
            self.twin_fold_range_prechecked(),
            self.twin_reduce(),
            self.twin_settled(),
            self.twin_epilogue(),
        ];
        quote! {
            impl ::warpfit::__private::NestedKernel for Kernel<'_> {
                const NAME: &'static str = #name;
                type Acc = #acc_t;
                type Ctx = Ctx;

                #(#methods)*
            }
        }
    }

    fn twin_prologue(&self) -> TokenStream {
        let k = self.k;
        let names = plumbing_names();
        let (task_h, lo_h, hi_h) = (&names.task, &names.lo, &names.hi);
        let mut used = BTreeSet::new();
        k.prologue.iter().for_each(|(_, v)| uses(v, &mut used));
        uses(&k.lo, &mut used);
        uses(&k.hi, &mut used);
        let bind = self.bind(&used, false);
        let lets = k.prologue.iter().map(|(id, v)| self.checked.let_(*id, v));
        let (lo, hi) = (self.checked.expr(&k.lo), self.checked.expr(&k.hi));
        let ctx_names = k.ctx.iter().map(|id| self.checked.local(*id));
        let f = fault();
        quote! {
            #[inline]
            fn prologue(&self, #task_h: usize) -> ::core::result::Result<(Ctx, usize, usize), #f> {
                #bind
                #(#lets)*
                let #lo_h: ::core::primitive::usize = #lo;
                let #hi_h: ::core::primitive::usize = #hi;
                ::core::result::Result::Ok((Ctx { #(#ctx_names),* }, #lo_h, #hi_h))
            }
        }
    }

    fn twin_init(&self) -> TokenStream {
        let k = self.k;
        let names = plumbing_names();
        let (task_h, ctx_h) = (&names.task, &names.ctx);
        let mut used = BTreeSet::new();
        uses(&k.init, &mut used);
        let bind = self.bind(&used, true);
        let init = self.checked.expr(&k.init);
        let (acc_t, f) = (ty(k.acc), fault());
        quote! {
            #[inline]
            fn init(&self, #task_h: usize, #ctx_h: &Ctx) -> ::core::result::Result<#acc_t, #f> {
                #bind
                ::core::result::Result::Ok(#init)
            }
        }
    }

    /// The map's bindings: the task index and context fields it reads.
    fn map_bind(&self) -> TokenStream {
        let mut used = BTreeSet::new();
        self.k.visit_map(&mut |x| {
            if let crate::ir::ExprKind::Local(id) = x.kind {
                used.insert(id);
            }
        });
        self.bind(&used, true)
    }

    /// The map's value with `em`: the map expression, or a `for_each`
    /// body's statements then the placeholder `0`.
    fn map_value(&self, em: &Emitter<'_>) -> TokenStream {
        match &self.k.for_each {
            Some(body) => {
                let stmts = body.iter().map(|s| em.stmt(s));
                quote!({ #(#stmts)* 0u8 })
            }
            None => em.expr(&self.k.map),
        }
    }

    fn twin_map(&self) -> TokenStream {
        let k = self.k;
        let names = plumbing_names();
        let (task_h, ctx_h, fine_h) = (&names.task, &names.ctx, &names.fine);
        let bind = self.map_bind();
        let fine_local = self.checked.local(k.k);
        let map = self.map_value(&self.checked);
        let (acc_t, f) = (ty(k.acc), fault());
        quote! {
            #[inline]
            fn map(&self, #task_h: usize, #ctx_h: &Ctx, #fine_h: usize) -> ::core::result::Result<#acc_t, #f> {
                #bind
                let #fine_local: ::core::primitive::usize = #fine_h;
                ::core::result::Result::Ok(#map)
            }
        }
    }

    /// The hot loop's range check: arrays read at the fine-task index are
    /// bound-checked once per range (or per block of tasks), the rest per
    /// element; a range that fails takes the checked loop, which reports the
    /// exact fault. Gathers `x[col[k] as usize]` through a directly read
    /// unsigned index array are covered by one pass over `col[lo..hi]` per
    /// index array, against the shortest array gathered through it (a
    /// compare-and-OR fold, which vectorises on any x86-64; a maximum of u32
    /// needs SSE4.1).
    fn twin_precheck(&self) -> TokenStream {
        let k = self.k;
        let names = plumbing_names();
        let (lo_h, hi_h) = (&names.lo, &names.hi);
        let direct_names = self.access.direct.iter().map(|&i| &k.params[i].name);
        let index_ok = self.access.index_arrays().into_iter().map(|(c, gathered)| {
            let (n, t) = (&k.params[c].name, prim(k.params[c].ty));
            let lens = gathered.iter().map(|&g| &k.params[g].name);
            let (lim, l, b, v) = (
                plumbing("__lim"),
                plumbing("__l"),
                plumbing("__b"),
                plumbing("__v"),
            );
            quote!(&& {
                let #lim = ::core::primitive::usize::MAX #(.min(self.#lens.len()))*;
                match <#t as ::core::convert::TryFrom<::core::primitive::usize>>::try_from(#lim) {
                    ::core::result::Result::Ok(#l) => {
                        !self.#n[#lo_h..#hi_h].iter().fold(false, |#b, &#v| #b | (#v >= #l))
                    }
                    // Longer than the index type reaches: every index is in range.
                    ::core::result::Result::Err(_) => true,
                }
            })
        });
        quote! {
            #[inline]
            fn precheck(&self, #lo_h: usize, #hi_h: usize) -> bool {
                #lo_h <= #hi_h #(&& #hi_h <= self.#direct_names.len())* #(#index_ok)*
            }
        }
    }

    /// The map over a prechecked range, with the covered loads unchecked.
    fn twin_fold_range_prechecked(&self) -> TokenStream {
        let k = self.k;
        let names = plumbing_names();
        let (task_h, ctx_h, acc_h, fine_h, lo_h, hi_h) = (
            &names.task,
            &names.ctx,
            &names.acc,
            &names.fine,
            &names.lo,
            &names.hi,
        );
        let b_h = plumbing("__b");
        let stop = k
            .reduce
            .settled_by()
            .map(|v| quote!(if #acc_h == #v { break; }));
        let fast = Emitter {
            locals: &k.locals,
            params: &k.params,
            prechecked: Some(super::Prechecked {
                fine: k.k,
                access: self.access,
            }),
        };
        let map_fast = self.map_value(&fast);
        let bind = self.map_bind();
        let fine_local = self.checked.local(k.k);
        let (acc_t, f) = (ty(k.acc), fault());
        quote! {
            #[inline]
            #[allow(unused_unsafe)]
            unsafe fn fold_range_prechecked(
                &self,
                #task_h: usize,
                #ctx_h: &Ctx,
                #lo_h: usize,
                #hi_h: usize,
                mut #acc_h: #acc_t,
            ) -> ::core::result::Result<#acc_t, #f> {
                #bind
                for #fine_h in #lo_h..#hi_h {
                    let #fine_local: ::core::primitive::usize = #fine_h;
                    let #b_h: #acc_t = #map_fast;
                    #acc_h = self.reduce(#acc_h, #b_h)?;
                    #stop
                }
                ::core::result::Result::Ok(#acc_h)
            }
        }
    }

    fn twin_reduce(&self) -> TokenStream {
        let k = self.k;
        let (a_h, b_h) = (plumbing("__a"), plumbing("__b"));
        let acc_t = ty(k.acc);
        let body = match &k.reduce {
            Reduce::Closure { a, b, body } => {
                let (an, bn) = (self.checked.local(*a), self.checked.local(*b));
                let body = self.checked.expr(body);
                quote!(let #an: #acc_t = #a_h; let #bn: #acc_t = #b_h; ::core::result::Result::Ok(#body))
            }
            Reduce::MinMax { max } => {
                let m = if *max { quote!(max) } else { quote!(min) };
                if k.acc.is_float() {
                    let p = prim(k.acc);
                    quote!(::core::result::Result::Ok(#p::#m(#a_h, #b_h)))
                } else {
                    quote!(::core::result::Result::Ok(::core::cmp::Ord::#m(#a_h, #b_h)))
                }
            }
            Reduce::DeviceFn(i) => {
                let f = call_const(*i);
                quote!(#f(#a_h, #b_h))
            }
            Reduce::Logic { all: true } => quote!(::core::result::Result::Ok(#a_h && #b_h)),
            Reduce::Logic { all: false } => quote!(::core::result::Result::Ok(#a_h || #b_h)),
        };
        let f = fault();
        quote! {
            #[inline]
            fn reduce(&self, #a_h: #acc_t, #b_h: #acc_t) -> ::core::result::Result<#acc_t, #f> {
                #body
            }
        }
    }

    /// `any` / `all`: the value that settles the fold, so executors stop
    /// there; other folds keep the trait's `false`.
    fn twin_settled(&self) -> TokenStream {
        let Some(v) = self.k.reduce.settled_by() else {
            return TokenStream::new();
        };
        let a_h = plumbing("__a");
        quote! {
            #[inline]
            fn settled(&self, #a_h: &bool) -> bool {
                *#a_h == #v
            }
        }
    }

    fn twin_epilogue(&self) -> TokenStream {
        let k = self.k;
        let names = plumbing_names();
        let (task_h, ctx_h, acc_h) = (&names.task, &names.ctx, &names.acc);
        let mut used = BTreeSet::new();
        k.epilogue.iter().for_each(|s| {
            s.visit_exprs(&mut |x| {
                if let crate::ir::ExprKind::Local(id) = x.kind {
                    used.insert(id);
                }
            })
        });
        let bind = self.bind(&used, true);
        let stmts = k.epilogue.iter().map(|s| self.checked.stmt(s));
        let (acc_t, f) = (ty(k.acc), fault());
        quote! {
            #[inline]
            fn epilogue(&self, #task_h: usize, #ctx_h: &Ctx, #acc_h: #acc_t) -> ::core::result::Result<(), #f> {
                #bind
                #(#stmts)*
                ::core::result::Result::Ok(())
            }
        }
    }

    /// `impl GatherKernel`: the gather throttling reads, when there is one.
    fn gather_impl(&self) -> TokenStream {
        let Ok(throttle) = &self.access.throttle else {
            return TokenStream::new();
        };
        let k = self.k;
        let names = plumbing_names();
        let (task_h, ctx_h, fine_h) = (&names.task, &names.ctx, &names.fine);
        let gathered_name = gathered_names(k, throttle);
        let gathered_field = &k.params[throttle.first()].name;
        // A cache-fit partition holds one element of each gathered array.
        let gathered_bytes: usize = throttle
            .gathered
            .iter()
            .map(|&i| k.params[i].ty.size())
            .sum();
        let out_bytes: usize = k
            .params
            .iter()
            .filter(|p| p.kind == ParamKind::Output)
            .map(|p| p.ty.size())
            .sum();
        let mut used = BTreeSet::new();
        uses(&throttle.index, &mut used);
        let bind = self.bind(&used, true);
        let idx = self.checked.expr(&throttle.index);
        let fine_local = self.checked.local(k.k);
        let res_usize = result(quote!(usize));
        let shape = self.gather_shape(throttle);
        quote! {
            impl ::warpfit::__private::GatherKernel for Kernel<'_> {
                #shape
                const GATHERED: &'static str = #gathered_name;
                const GATHERED_ELEM_BYTES: usize = #gathered_bytes;
                const OUTPUT_ELEM_BYTES: usize = #out_bytes;
                fn gathered_len(&self) -> usize {
                    self.#gathered_field.len()
                }
                fn gathered_index(&self, #task_h: usize, #ctx_h: &Ctx, #fine_h: usize) -> #res_usize {
                    #bind
                    let #fine_local: ::core::primitive::usize = #fine_h;
                    ::core::result::Result::Ok(#idx)
                }
            }
        }
    }

    /// `GatherKernel::shape`: the prologue's bindings the range bounds and
    /// the gathered index need (`analyse::shape_lets`), the other context
    /// fields default, so that the work graph reads only the shape arrays.
    fn gather_shape(&self, throttle: &crate::analyse::Throttle) -> TokenStream {
        let k = self.k;
        let names = plumbing_names();
        let (task_h, lo_h, hi_h) = (&names.task, &names.lo, &names.hi);
        let need = crate::analyse::shape_lets(k, &throttle.index);
        if k.prologue.iter().all(|(id, _)| need.contains(id)) {
            // Every binding is needed: the prologue itself.
            return TokenStream::new();
        }
        let mut used = BTreeSet::new();
        k.prologue
            .iter()
            .filter(|(id, _)| need.contains(id))
            .for_each(|(_, v)| uses(v, &mut used));
        uses(&k.lo, &mut used);
        uses(&k.hi, &mut used);
        let bind = self.bind(&used, false);
        let lets = k
            .prologue
            .iter()
            .filter(|(id, _)| need.contains(id))
            .map(|(id, v)| self.checked.let_(*id, v));
        let (lo, hi) = (self.checked.expr(&k.lo), self.checked.expr(&k.hi));
        let fields = k.ctx.iter().map(|id| {
            let n = self.checked.local(*id);
            match need.contains(id) {
                true => quote!(#n),
                false => quote!(#n: ::core::default::Default::default()),
            }
        });
        let f = fault();
        quote! {
            #[inline]
            fn shape(&self, #task_h: usize) -> ::core::result::Result<(Ctx, usize, usize), #f> {
                #bind
                #(#lets)*
                let #lo_h: ::core::primitive::usize = #lo;
                let #hi_h: ::core::primitive::usize = #hi;
                ::core::result::Result::Ok((Ctx { #(#fields),* }, #lo_h, #hi_h))
            }
        }
    }

    /// `launch` and `launch_with`.
    fn launch(&self) -> TokenStream {
        let k = self.k;
        let name = k.name.to_string();
        let param_docs: Vec<String> = k.params.iter().map(param_doc).collect();
        let launch_doc = format!(
            "Runs `{name}` on `device` over `tasks` (a task count `n` for tasks `0..n`, or a `&TaskList`).\n\n\
             # Parameters\n- `device`: where to run (CUDA if `device.cuda()` is some, else the CPU)\n\
             - `tasks`: the coarse tasks\n{}\n\n\
             Arrays given as `&DeviceVec` are used where they are, neither copied nor waited for: on CUDA a launch \
             with no host output returns once its kernels are enqueued (a CTE launch over all tasks whose split \
             depends on the tasks' sizes first waits for the size kernel; [`prepare`] does that once), and its \
             fault is reported by the next \
             `device.synchronize()`, `DeviceVec` download, or launch with a host output. Host outputs are downloaded \
             after the launch, which waits for it.\n\n\
             # Errors\nAn index out of range, an integer division by zero, a task list that does not fit the \
             kernel, a `DeviceVec` of another device than `device` (naming the parameter), or a device error.",
            param_docs.join("\n")
        );
        let launch_with_doc = format!(
            "[`launch`] with explicit options (`config.decomposition` selects CTE, 1D or sub-warp on CUDA; the CPU ignores it).\n\n\
             # Parameters\n- `device`, `tasks`: as for [`launch`]\n- `config`: launch options\n{}",
            param_docs.join("\n")
        );
        let params: Vec<_> = k
            .params
            .iter()
            .map(|p| {
                let (n, t) = (&p.name, ty(p.ty));
                match p.kind {
                    ParamKind::Input => {
                        quote!(#n: &(impl ::warpfit::__private::Input<#t> + ?::core::marker::Sized))
                    }
                    ParamKind::Output | ParamKind::Shared => {
                        quote!(#n: &mut (impl ::warpfit::__private::Output<#t> + ?::core::marker::Sized))
                    }
                    ParamKind::Scalar => quote!(#n: #t),
                    ParamKind::Worklist => {
                        quote!(#n: &(impl ::warpfit::__private::WorklistArg + ?::core::marker::Sized))
                    }
                }
            })
            .collect();
        let arg_names = k.params.iter().map(|p| &p.name);
        let device_args = k.params.iter().map(|p| {
            let n = &p.name;
            match p.kind {
                ParamKind::Input => quote!(::warpfit::__private::Arg::from_input(#n)),
                ParamKind::Output => quote!(::warpfit::__private::Arg::from_output(#n)),
                ParamKind::Scalar => quote!(::warpfit::__private::Arg::scalar(#n)),
                ParamKind::Shared => quote!(::warpfit::__private::Arg::from_shared(#n)),
                ParamKind::Worklist => quote!(::warpfit::__private::Arg::from_worklist(#n)),
            }
        });
        let twin_args = k.params.iter().enumerate().map(|(i, p)| {
            let n = &p.name;
            match p.kind {
                ParamKind::Input => {
                    let i = proc_macro2::Literal::usize_unsuffixed(i);
                    quote!(#n: ::warpfit::__private::host_input(&SPEC, #i, #n)?)
                }
                ParamKind::Output => {
                    let i = proc_macro2::Literal::usize_unsuffixed(i);
                    quote!(
                        #n: ::warpfit::__private::SharedOut::new(::warpfit::__private::host_output(&SPEC, #i, #n)?)
                    )
                }
                ParamKind::Scalar => quote!(#n),
                ParamKind::Shared => {
                    let i = proc_macro2::Literal::usize_unsuffixed(i);
                    quote!(#n: ::warpfit::__private::host_shared(&SPEC, #i, #n)?)
                }
                ParamKind::Worklist => {
                    let i = proc_macro2::Literal::usize_unsuffixed(i);
                    quote!(#n: ::warpfit::__private::host_worklist(&SPEC, #i, #n)?)
                }
            }
        });
        let (dev, cfg, tasks, cuda, kernel) = (
            plumbing("device"),
            plumbing("config"),
            plumbing("tasks"),
            plumbing("cuda"),
            plumbing("__kernel"),
        );
        let frontier_check = self.frontier_check(&tasks, |n| quote!(#kernel.#n));
        let columns = self.columns(&tasks, &cfg);
        quote! {
            #[doc = #launch_doc]
            pub fn launch<'t>(
                #dev: &::warpfit::__private::Device,
                #tasks: impl ::core::convert::Into<::warpfit::__private::Tasks<'t>>,
                #(#params),*
            ) -> ::warpfit::__private::Result<()> {
                launch_with(#dev, &::warpfit::__private::LaunchConfig::default(), #tasks, #(#arg_names),*)
            }

            #[doc = #launch_with_doc]
            pub fn launch_with<'t>(
                #dev: &::warpfit::__private::Device,
                #cfg: &::warpfit::__private::LaunchConfig,
                #tasks: impl ::core::convert::Into<::warpfit::__private::Tasks<'t>>,
                #(#params),*
            ) -> ::warpfit::__private::Result<()> {
                let #tasks = #tasks.into();
                #columns
                if let ::core::option::Option::Some(#cuda) = #dev.cuda() {
                    return #cuda.launch(&SPEC, #cfg, #tasks, &mut [#(#device_args),*]);
                }
                // SAFETY (`host_input`'s contract): the views live only in this
                // launch, which runs to completion on this thread.
                #[allow(unused_unsafe)]
                let #kernel = unsafe { Kernel { #(#twin_args),* } };
                #frontier_check
                ::warpfit::__private::cpu::run(&#kernel, #tasks)
            }
        }
    }

    /// A 2-D kernel's launch: the row count `tasks` becomes the flattened
    /// task count and `config` the options a 2-D launch runs with
    /// (`column_tasks`, `column_config`); nothing for other kernels.
    fn columns(&self, tasks: &proc_macro2::Ident, cfg: &proc_macro2::Ident) -> TokenStream {
        let Some(c) = self.k.columns else {
            return TokenStream::new();
        };
        let count = &self.k.params[c].name;
        quote! {
            let #tasks = ::warpfit::__private::column_tasks(SPEC.name, #tasks, #count as u64)?;
            let #cfg = &::warpfit::__private::column_config(#cfg, #count as u64);
        }
    }

    /// A CPU launch's check that it pushes to no list it reads as its
    /// tasks (nothing for a kernel without worklists); `field(name)` is the
    /// twin's field.
    fn frontier_check(
        &self,
        tasks: &proc_macro2::Ident,
        field: impl Fn(&syn::Ident) -> TokenStream,
    ) -> TokenStream {
        let lists: Vec<TokenStream> = self
            .k
            .params
            .iter()
            .enumerate()
            .filter(|(_, p)| p.kind == ParamKind::Worklist)
            .map(|(i, p)| {
                let f = field(&p.name);
                quote!((#i, #f))
            })
            .collect();
        if lists.is_empty() {
            return TokenStream::new();
        }
        quote!(::warpfit::__private::check_frontier(&SPEC, &#tasks, &[#(#lists),*])?;)
    }

    /// `prepare`: the launch made once over device-resident arrays, run
    /// many times through the returned handle.
    fn prepare(&self) -> TokenStream {
        let k = self.k;
        let name = k.name.to_string();
        let param_docs: Vec<String> = k.params.iter().map(prepare_param_doc).collect();
        let doc = format!(
            "Prepares `{name}` on `device` over `tasks` with device-resident arrays, for the returned handle's `run` \
             to re-launch many times: on CUDA the split choice, warp packing, task-list upload, scratch and argument \
             packing happen here once, and `run` only enqueues the kernels; on the CPU `run` runs the twin.\n\n\
             The handle borrows the arrays; outputs too are shared borrows, since the handle writes only device memory \
             (on the CPU, through the twin's `SharedOut`). On CUDA, a fault of a run is reported by the handle's `check`.\n\n\
             # Parameters\n- `device`, `tasks`: as for [`launch`]\n- `config`: launch options\n{}\n\n\
             # Errors\nAn array of another device (naming the parameter), an output also passed as another argument, \
             a task list that does not fit the kernel, or a device error.",
            param_docs.join("\n")
        );
        let params = k.params.iter().map(|p| {
            let (n, t) = (&p.name, ty(p.ty));
            match p.kind {
                ParamKind::Input | ParamKind::Output | ParamKind::Shared => {
                    quote!(#n: &'a ::warpfit::__private::DeviceVec<#t>)
                }
                ParamKind::Scalar => quote!(#n: #t),
                ParamKind::Worklist => {
                    quote!(#n: &'a (impl ::warpfit::__private::WorklistArg + ?::core::marker::Sized))
                }
            }
        });
        let args = k.params.iter().map(|p| {
            let n = &p.name;
            match p.kind {
                ParamKind::Input => quote!(::warpfit::__private::Arg::resident_input(#n)),
                ParamKind::Output => quote!(::warpfit::__private::Arg::resident_output(#n)),
                ParamKind::Scalar => quote!(::warpfit::__private::Arg::scalar(#n)),
                ParamKind::Shared => quote!(::warpfit::__private::Arg::resident_shared(#n)),
                ParamKind::Worklist => quote!(::warpfit::__private::Arg::from_worklist(#n)),
            }
        });
        let (dev, cfg, tasks, cuda, checked) = (
            plumbing("device"),
            plumbing("config"),
            plumbing("tasks"),
            plumbing("cuda"),
            plumbing("__args"),
        );
        let kernel = plumbing("__kernel");
        let frontier_check = self.frontier_check(&tasks, |n| quote!(#kernel.#n));
        let columns = self.columns(&tasks, &cfg);
        let twin_args = k.params.iter().enumerate().map(|(i, p)| {
            let n = &p.name;
            let i = proc_macro2::Literal::usize_unsuffixed(i);
            match p.kind {
                ParamKind::Input => quote!(#n: #checked.input(#i)?),
                ParamKind::Output => quote!(#n: #checked.output(#i)?),
                ParamKind::Scalar => quote!(#n),
                ParamKind::Shared => quote!(#n: #checked.shared(#i)?),
                ParamKind::Worklist => quote!(#n: #checked.worklist(#i)?),
            }
        });
        quote! {
            #[doc = #doc]
            pub fn prepare<'a>(
                #dev: &::warpfit::__private::Device,
                #cfg: &::warpfit::__private::LaunchConfig,
                #tasks: impl ::core::convert::Into<::warpfit::__private::Tasks<'a>>,
                #(#params),*
            ) -> ::warpfit::__private::Result<::warpfit::__private::PreparedLaunch<'a>> {
                let #tasks = #tasks.into();
                #columns
                let #checked = ::std::vec![#(#args),*];
                if let ::core::option::Option::Some(#cuda) = #dev.cuda() {
                    return ::warpfit::__private::PreparedLaunch::cuda(#cuda, &SPEC, #cfg, #tasks, #checked);
                }
                ::warpfit::__private::PreparedLaunch::cpu(
                    &SPEC,
                    #checked,
                    ::std::boxed::Box::new(move |#checked: &::warpfit::__private::CpuArgs<'a>| {
                        let #kernel = Kernel { #(#twin_args),* };
                        #frontier_check
                        ::warpfit::__private::cpu::run(&#kernel, #tasks)
                    }),
                )
            }
        }
    }

    /// `work_graph`: the twin without outputs enumerating each task's
    /// gathered indices, or the error saying why the kernel has none.
    fn work_graph(&self) -> TokenStream {
        let k = self.k;
        let name = k.name.to_string();
        let wg_doc = format!(
            "The work graph of `{name}` over tasks `0..n_tasks` (tuples `(task, gathered index)`), for throttling.\n\n\
             Builds the CPU twin without outputs and enumerates each task's gathered indices with it.\n\n\
             # Errors\n`Error::InvalidArgument` when the kernel's map does not read exactly one array through an \
             index array; index faults of the prologue or the gathered index."
        );
        let inputs: Vec<&Param> = k
            .params
            .iter()
            .filter(|p| matches!(p.kind, ParamKind::Input | ParamKind::Scalar))
            .collect();
        let params = inputs.iter().map(|p| {
            let (n, t) = (&p.name, ty(p.ty));
            if p.kind == ParamKind::Input {
                quote!(#n: &[#t])
            } else {
                quote!(#n: #t)
            }
        });
        let n_tasks = plumbing("n_tasks");
        let body = match &self.access.throttle {
            Ok(_) => {
                let kernel = plumbing("__kernel");
                let twin_args = k.params.iter().map(|p| {
                    let n = &p.name;
                    match p.kind {
                        ParamKind::Output => {
                            quote!(#n: ::warpfit::__private::SharedOut::new(&mut []))
                        }
                        _ => quote!(#n),
                    }
                });
                quote! {
                    let #kernel = Kernel { #(#twin_args),* };
                    ::warpfit::__private::WorkGraph::from_kernel(&#kernel, #n_tasks)
                }
            }
            Err(why) => {
                let msg = format!(
                    "kernel `{name}` cannot be throttled: {}; a work graph needs gathers at one index expression",
                    why.reason(&k.params)
                );
                let unused = inputs.iter().map(|p| &p.name);
                quote! {
                    let _ = (#n_tasks, #(#unused),*);
                    ::core::result::Result::Err(::warpfit::__private::Error::InvalidArgument(::std::string::String::from(#msg)))
                }
            }
        };
        quote! {
            #[doc = #wg_doc]
            pub fn work_graph(
                #n_tasks: usize,
                #(#params),*
            ) -> ::warpfit::__private::Result<::warpfit::__private::WorkGraph> {
                #body
            }
        }
    }
}

fn param_doc(p: &Param) -> String {
    match p.kind {
        ParamKind::Shared => format!(
            "- `{}`: shared array, updated by any task through atomics (`&mut [{t}]` or `&mut Vec<{t}>`, uploaded and downloaded, or `&mut DeviceVec<{t}>` updated in place)",
            p.name,
            t = p.ty.rust_name()
        ),
        ParamKind::Worklist => format!(
            "- `{}`: worklist pushed to (a `&DeviceWorklist` of the launch's device, or on the CPU a `&Worklist`)",
            p.name
        ),
        ParamKind::Input => format!(
            "- `{}`: read-only input array (`&[{t}]`, `&Vec<{t}>`, `&[{t}; N]`, or `&DeviceVec<{t}>` used in place)",
            p.name,
            t = p.ty.rust_name()
        ),
        ParamKind::Output => format!(
            "- `{}`: output, written at the task index (`&mut [{t}]` or `&mut Vec<{t}>`, downloaded after the launch, or `&mut DeviceVec<{t}>` written in place)",
            p.name,
            t = p.ty.rust_name()
        ),
        ParamKind::Scalar => format!("- `{}: {}`: scalar", p.name, p.ty.rust_name()),
    }
}

fn prepare_param_doc(p: &Param) -> String {
    match p.kind {
        ParamKind::Shared => format!(
            "- `{}: &DeviceVec<{}>`: shared array, updated by any task through atomics",
            p.name,
            p.ty.rust_name()
        ),
        ParamKind::Worklist => format!(
            "- `{}`: worklist pushed to (a `&DeviceWorklist` of the device)",
            p.name
        ),
        ParamKind::Input => format!(
            "- `{}: &DeviceVec<{}>`: read-only input array",
            p.name,
            p.ty.rust_name()
        ),
        ParamKind::Output => format!(
            "- `{}: &DeviceVec<{}>`: output, written at the task index",
            p.name,
            p.ty.rust_name()
        ),
        ParamKind::Scalar => format!("- `{}: {}`: scalar", p.name, p.ty.rust_name()),
    }
}

/// The gathered arrays' names joined by `", "` (`"x"`, `"rank, inv_deg"`).
fn gathered_names(k: &Kernel, t: &crate::analyse::Throttle) -> String {
    t.gathered
        .iter()
        .map(|&i| k.params[i].name.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
