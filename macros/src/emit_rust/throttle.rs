//! The items `#[throttled]` adds to a kernel's module: `THROTTLE_ROLES`,
//! `throttle_options()` (the attribute's defaults), `throttle(..)` and the
//! typed handle `Throttle`, one emitter method each.

use super::{plumbing, ty};
use crate::analyse::Roles;
use crate::ir::{Kernel, Param, ParamKind};
use crate::throttled::ThrottleAttr;
use proc_macro2::TokenStream;
use quote::quote;

/// Why no `#[throttled]` item meets a shared array or worklist: `nested`
/// rejects the attribute on such kernels before these items are emitted.
const SCATTERS: &str = "a throttled kernel has no shared arrays or worklists";

/// The throttled items of `k`.
pub fn items(k: &Kernel, roles: &Roles, attr: &ThrottleAttr) -> TokenStream {
    let e = ThrottleEmitter { k, roles, attr };
    let build = match k.columns {
        None => e.build(),
        Some(count) => e.build_columns(count),
    };
    let (consts, options, handle) = (e.roles(), e.options(), e.handle());
    quote! {
        #consts
        #options
        #build
        #handle
    }
}

/// How a generated constructor takes its shape arrays: each array's
/// parameter type (from its element type), its entry in the shape list,
/// and the list around the entries.
#[derive(Clone, Copy)]
struct ArrayForm<'f> {
    param: &'f dyn Fn(TokenStream) -> TokenStream,
    entry: &'f dyn Fn(&syn::Ident) -> TokenStream,
    list: &'f dyn Fn(Vec<TokenStream>) -> TokenStream,
}

impl ArrayForm<'static> {
    /// `&DeviceVec<T>`s, passed as resident inputs in a slice.
    const RESIDENT: Self = ArrayForm {
        param: &|t| quote!(&::warpfit::DeviceVec<#t>),
        entry: &|n| quote!(::warpfit::__private::Arg::resident_input(#n)),
        list: &|e| quote!(&[#(#e),*]),
    };
}

struct ThrottleEmitter<'a> {
    k: &'a Kernel,
    roles: &'a Roles,
    attr: &'a ThrottleAttr,
}

impl ThrottleEmitter<'_> {
    fn shapes(&self, i: usize) -> bool {
        i == self.roles.range || self.roles.fine.contains(&i)
    }

    /// The parameters passed to each launch, in order.
    fn per_launch(&self) -> impl Iterator<Item = (usize, &Param)> {
        self.k
            .params
            .iter()
            .enumerate()
            .filter(|(i, _)| !self.shapes(*i))
    }

    fn roles(&self) -> TokenStream {
        let range = self.roles.range;
        let fine = &self.roles.fine;
        let doc = format!(
            "Which parameters shape the work under throttling: `{}` is the range array, {} read at the fine-task index.",
            self.k.params[range].name,
            self.roles
                .fine
                .iter()
                .map(|&i| format!("`{}`", self.k.params[i].name))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let gathered = &self.roles.gathered;
        let through = match self.roles.through {
            Some(i) => quote!(::core::option::Option::Some(#i)),
            None => quote!(::core::option::Option::None),
        };
        let (index, task_indexed, overwritten, refused, at_task) = match &self.roles.remap {
            Ok(r) => {
                let i = r.index;
                (
                    quote!(::core::option::Option::Some(#i)),
                    r.task_indexed.clone(),
                    r.overwritten.clone(),
                    String::new(),
                    r.gathered_at_task,
                )
            }
            Err(why) => (
                quote!(::core::option::Option::None),
                Vec::new(),
                Vec::new(),
                why.clone(),
                false,
            ),
        };
        quote! {
            #[doc = #doc]
            pub const THROTTLE_ROLES: ::warpfit::__private::ThrottleRoles =
                ::warpfit::__private::ThrottleRoles {
                    range: #range,
                    fine: &[#(#fine),*],
                    gathered: &[#(#gathered),*],
                    gathered_at_task: #at_task,
                    index: #index,
                    gather_index: #through,
                    task_indexed: &[#(#task_indexed),*],
                    overwritten: &[#(#overwritten),*],
                    remap_refused: #refused,
                };
        }
    }

    /// `throttle_options()`: `ThrottleOptions::default()` with the
    /// attribute's arguments.
    fn options(&self) -> TokenStream {
        let mut body = quote!(::warpfit::__private::ThrottleOptions::default());
        if let Some(p) = &self.attr.policy {
            body = quote!(#body.with_policy(#p.parse()?));
        }
        if let Some(c) = &self.attr.cache {
            body = quote!(#body.with_cache(#c.parse()?));
        }
        if let Some(p) = &self.attr.partitioner {
            body = quote!(#body.with_partitioner(#p.parse()?));
        }
        let doc = format!(
            "The throttling options `#[throttled]` gives `{}`: policy {}, cache {}, partitioner {} (unset ones: `ThrottleOptions::default()`'s). Change any with its `with_*` method before passing them to [`throttle`].\n\n# Errors\nNone in practice: the macro checked each value.",
            self.k.name,
            self.attr.policy.as_deref().unwrap_or("auto"),
            self.attr.cache.as_deref().unwrap_or("l2"),
            self.attr.partitioner.as_deref().unwrap_or("the default"),
        );
        quote! {
            #[doc = #doc]
            pub fn throttle_options() -> ::warpfit::__private::Result<::warpfit::__private::ThrottleOptions> {
                ::core::result::Result::Ok(#body)
            }
        }
    }

    /// The range and fine arrays, in parameter order.
    fn shape_params(&self) -> impl Iterator<Item = (usize, &Param)> {
        self.k
            .params
            .iter()
            .enumerate()
            .filter(|(i, _)| self.shapes(*i))
    }

    /// The first gathered array, whose name sizes the plan (the others
    /// have its length).
    fn first_gathered(&self) -> usize {
        self.roles.gathered[0]
    }

    /// `<gathered>_len`, the parameter that sizes the plan's stand-ins.
    fn gathered_len(&self) -> proc_macro2::Ident {
        quote::format_ident!("{}_len", self.k.params[self.first_gathered()].name)
    }

    /// The gathered arrays' names, as the documentation lists them.
    fn gathered_names(&self) -> String {
        self.roles
            .gathered
            .iter()
            .map(|&i| format!("`{}`", self.k.params[i].name))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The hidden helpers both builders call: the work graph (the twin over
    /// the shape arrays, zeroed stand-ins for the gathered arrays, the other
    /// per-launch arrays empty: the roles guarantee the prologue and the
    /// gathered index read none of them) and the handle's CPU run.
    fn helpers(&self) -> TokenStream {
        let (graph, cpu) = (self.graph_helper(), self.cpu_helper());
        quote!(#graph #cpu)
    }

    /// The hidden helper that builds the work graph `throttle` plans.
    fn graph_helper(&self) -> TokenStream {
        let k = self.k;
        let (n, glen) = (plumbing("n_tasks"), self.gathered_len());
        let graph_k = plumbing("__kernel");
        // One zeroed stand-in per element type of the gathered arrays (they
        // are scalars: tuple arrays do not exist).
        let stand_in = |t: crate::ir::Ty| plumbing(&format!("__gathered_{}", t.rust_name()));
        let mut types: Vec<crate::ir::Ty> = Vec::new();
        for &i in &self.roles.gathered {
            if !types.contains(&k.params[i].ty) {
                types.push(k.params[i].ty);
            }
        }
        let stand_ins = types.iter().map(|&t| {
            let (v, gt) = (stand_in(t), ty(t));
            quote! {
                ::warpfit::__private::mem_check_elems::<#gt>("the gathered arrays' stand-ins for planning", #glen)?;
                let #v: ::std::vec::Vec<#gt> = ::std::vec![::core::default::Default::default(); #glen];
            }
        });
        let shape_params = self.shape_params().map(|(_, p)| {
            let (n, t) = (&p.name, ty(p.ty));
            quote!(#n: &[#t])
        });
        let twin_fields = k.params.iter().enumerate().map(|(i, p)| {
            let n = &p.name;
            match p.kind {
                _ if self.roles.gathered.contains(&i) => {
                    let v = stand_in(p.ty);
                    quote!(#n: &#v)
                }
                _ if self.shapes(i) => quote!(#n),
                ParamKind::Input => quote!(#n: &[]),
                ParamKind::Output => quote!(#n: ::warpfit::__private::SharedOut::new(&mut [])),
                ParamKind::Scalar => quote!(#n: ::core::default::Default::default()),
                ParamKind::Shared | ParamKind::Worklist => unreachable!("{SCATTERS}"),
            }
        });
        let graph_fn = plumbing("__throttle_graph");
        quote! {
            /// The work graph `throttle` plans.
            fn #graph_fn(
                #n: usize,
                #glen: usize,
                #(#shape_params),*
            ) -> ::warpfit::__private::Result<::warpfit::__private::WorkGraph> {
                #(#stand_ins)*
                let #graph_k = Kernel { #(#twin_fields),* };
                ::warpfit::__private::WorkGraph::from_kernel(&#graph_k, #n)
            }
        }
    }

    /// The hidden helper that runs the handle's CPU path: the twin over its
    /// arrays, tasks `0..n` (a 2-D kernel's flattened tasks).
    fn cpu_helper(&self) -> TokenStream {
        let a = plumbing("__args");
        let cpu_fields = self.k.params.iter().enumerate().map(|(i, p)| {
            let n = &p.name;
            let i = proc_macro2::Literal::usize_unsuffixed(i);
            match p.kind {
                ParamKind::Input => quote!(#n: #a.input(#i)?),
                ParamKind::Output => quote!(#n: #a.output(#i)?),
                ParamKind::Scalar => quote!(#n: #a.scalar(#i)?),
                ParamKind::Shared | ParamKind::Worklist => unreachable!("{SCATTERS}"),
            }
        });
        let cpu_fn = plumbing("__throttle_cpu_run");
        quote! {
            /// The handle's CPU path: the twin over its arrays.
            fn #cpu_fn(#a: &::warpfit::__private::CpuArgs<'_>, n: usize) -> ::warpfit::__private::Result<()> {
                ::warpfit::__private::cpu::run(&Kernel { #(#cpu_fields),* }, ::warpfit::__private::Tasks::All(n))
            }
        }
    }

    /// `throttle`'s documentation.
    fn build_doc(&self) -> String {
        let k = self.k;
        let name = k.name.to_string();
        let arrays: Vec<String> = self
            .shape_params()
            .map(|(i, p)| {
                format!(
                    "- `{}: &[{}]`: {}",
                    p.name,
                    p.ty.rust_name(),
                    if i == self.roles.range {
                        "the range array"
                    } else {
                        "read at the fine-task index"
                    }
                )
            })
            .collect();
        format!(
            "Plans `{name}` for throttled launches on `device` and returns the handle that runs them ([`Throttle::launch`]).\n\n\
             # Parameters\n- `device`: where to run (on the CPU backend every policy runs the CPU twin)\n\
             - `options`: the schedule, cache and partitioner ([`throttle_options`] gives the attribute's defaults)\n\
             - `n_tasks`: the launches run tasks `0..n_tasks`\n\
             - `{}`: the length of {}, the gathered arrays (passed at each launch, all of this length)\n{}\n\n\
             The handle keeps its own device copies of these arrays (the fine ones reordered part by part for `cf`); \
             everything else is passed to each launch. Throttling reorders each task's fine tasks: `{name}`'s reduce \
             operator must be commutative and associative.\n\n\
             # Errors\nInvalid options, a policy the handle does not launch yet (`org_r`, `cfq`, `sj`, `sjq`, remapping), \
             an index fault of the prologue or the gathered index, a range array that does not start at 0 and increase \
             (`cf` needs that), and device errors.",
            self.gathered_len(),
            self.gathered_names(),
            arrays.join("\n")
        )
    }

    /// `Some(some)` for a parameter that shapes the work, `None` otherwise:
    /// one entry of a constructor's shape list.
    fn shape_slot(&self, i: usize, some: TokenStream) -> TokenStream {
        if self.shapes(i) {
            quote!(::core::option::Option::Some(#some))
        } else {
            quote!(::core::option::Option::None)
        }
    }

    /// `throttle_resident(..)` (the shape arrays as `&DeviceVec`s, copied on
    /// the device) and `throttle_owned(..)` (as `DeviceVec`s by value, kept):
    /// the handles `auto` by the model plans on the device.
    fn on_device(&self) -> TokenStream {
        let (n, glen) = (plumbing("n_tasks"), self.gathered_len());
        let sizes = quote!(#n: usize, #glen: usize);
        let args = quote!(#n, #glen);
        let constructor = |name: &str, doc: &str, ctor: &str, form: ArrayForm<'_>| {
            self.constructor(name, doc, (&sizes, &args), ctor, form)
        };
        let resident = constructor(
            "throttle_resident",
            "[`throttle`] over arrays already on the CUDA device: the handle copies them on the \
             device, with no host copy and no work graph, and `auto`'s cost model plans on the device. Only `auto` by \
             the model (not `ThrottleOptions::exhaustive`) plans that way; other policies take host arrays \
             ([`throttle`]).\n\n# Errors\nAnother policy, a CPU device, arrays of another device; as [`throttle`].",
            "resident",
            ArrayForm::RESIDENT,
        );
        let owned = constructor(
            "throttle_owned",
            "[`throttle_resident`] over arrays handed over by value: the handle keeps the \
             `DeviceVec`s as they are, with no copy on the device (a caller done with them saves their copy's \
             memory and time).\n\n# Errors\nAs [`throttle_resident`].",
            "owning",
            ArrayForm {
                param: &|t| quote!(::warpfit::DeviceVec<#t>),
                entry: &|n| quote!(::warpfit::__private::OwnedShape::from(#n)),
                list: &|e| quote!(::std::vec![#(#e),*]),
            },
        );
        quote!(#resident #owned)
    }

    /// A generated constructor: `pub fn name(device, options, <sizes>,
    /// <shape arrays>)` calling `Throttled::<ctor>(device, &SPEC, roles,
    /// options, default config, <args>, <shape list>, cpu run)`, its arrays
    /// in `form`.
    fn constructor(
        &self,
        name: &str,
        doc: &str,
        (sizes, args): (&TokenStream, &TokenStream),
        ctor: &str,
        form: ArrayForm<'_>,
    ) -> TokenStream {
        let (dev, opts) = (plumbing("device"), plumbing("options"));
        let cpu_fn = plumbing("__throttle_cpu_run");
        let (name, ctor) = (
            quote::format_ident!("{name}"),
            quote::format_ident!("{ctor}"),
        );
        let params = self.shape_params().map(|(_, p)| {
            let (n, t) = (&p.name, (form.param)(ty(p.ty)));
            quote!(#n: #t)
        });
        let entries = self
            .k
            .params
            .iter()
            .enumerate()
            .map(|(i, p)| self.shape_slot(i, (form.entry)(&p.name)));
        let shape = (form.list)(entries.collect());
        quote! {
            #[doc = #doc]
            pub fn #name(
                #dev: &::warpfit::__private::Device,
                #opts: &::warpfit::__private::ThrottleOptions,
                #sizes,
                #(#params),*
            ) -> ::warpfit::__private::Result<Throttle> {
                let inner = ::warpfit::__private::Throttled::#ctor(
                    #dev,
                    &SPEC,
                    THROTTLE_ROLES,
                    #opts,
                    &::warpfit::__private::LaunchConfig::default(),
                    #args,
                    #shape,
                    #cpu_fn,
                )?;
                ::core::result::Result::Ok(Throttle { inner })
            }
        }
    }

    /// `throttle(device, options, n_tasks, <gathered>_len, shape arrays)` and
    /// `throttle_pipelined(..)` (the arrays by value): the work graph, then
    /// the handle.
    fn build(&self) -> TokenStream {
        let (dev, opts, n, glen) = (
            plumbing("device"),
            plumbing("options"),
            plumbing("n_tasks"),
            self.gathered_len(),
        );
        let (graph_fn, cpu_fn) = (plumbing("__throttle_graph"), plumbing("__throttle_cpu_run"));
        let names: Vec<_> = self.shape_params().map(|(_, p)| &p.name).collect();
        let borrowed = self.shape_params().map(|(_, p)| {
            let (n, t) = (&p.name, ty(p.ty));
            quote!(#n: &[#t])
        });
        let owned = self.shape_params().map(|(_, p)| {
            let (n, t) = (&p.name, ty(p.ty));
            quote!(#n: ::std::vec::Vec<#t>)
        });
        let slot = |i: usize, some: TokenStream| self.shape_slot(i, some);
        let shape_args = self.k.params.iter().enumerate().map(|(i, p)| {
            let n = &p.name;
            slot(i, quote!(::warpfit::__private::Arg::input(#n)))
        });
        let owned_args = self.k.params.iter().enumerate().map(|(i, p)| {
            let n = &p.name;
            slot(
                i,
                quote!(::std::boxed::Box::new(#n) as ::std::boxed::Box<dyn ::warpfit::__private::HostArray>),
            )
        });
        let helpers = self.helpers();
        let on_device = self.on_device();
        let doc = self.build_doc();
        let pipelined_doc = "[`throttle`] with the planning on a CPU thread (pipelined planning): the handle is ready at once, its \
             launches run the unthrottled schedule until the plan is in, then switch ([`Throttle::status`] says \
             where it is). Takes the arrays that shape the work by value; the parameters are otherwise those of \
             [`throttle`].\n\n# Errors\nAs [`throttle`]; the planner's errors come from the first launch after it \
             finished.";
        quote! {
            #helpers

            #[doc = #doc]
            pub fn throttle(
                #dev: &::warpfit::__private::Device,
                #opts: &::warpfit::__private::ThrottleOptions,
                #n: usize,
                #glen: usize,
                #(#borrowed),*
            ) -> ::warpfit::__private::Result<Throttle> {
                // The work graph only where the host plans from it or checks by it.
                let graph = match ::warpfit::__private::Throttled::needs_work_graph(#dev, #opts) {
                    true => ::core::option::Option::Some(#graph_fn(#n, #glen, #(#names),*)?),
                    false => ::core::option::Option::None,
                };
                let inner = ::warpfit::__private::Throttled::new(
                    #dev,
                    &SPEC,
                    THROTTLE_ROLES,
                    #opts,
                    &::warpfit::__private::LaunchConfig::default(),
                    #n,
                    #glen,
                    graph.as_ref(),
                    &[#(#shape_args),*],
                    #cpu_fn,
                )?;
                ::core::result::Result::Ok(Throttle { inner })
            }

            #on_device

            #[doc = #pipelined_doc]
            pub fn throttle_pipelined(
                #dev: &::warpfit::__private::Device,
                #opts: &::warpfit::__private::ThrottleOptions,
                #n: usize,
                #glen: usize,
                #(#owned),*
            ) -> ::warpfit::__private::Result<Throttle> {
                let graph = match ::warpfit::__private::Throttled::needs_work_graph(#dev, #opts) {
                    true => ::core::option::Option::Some(#graph_fn(#n, #glen, #(&#names[..]),*)?),
                    false => ::core::option::Option::None,
                };
                let inner = ::warpfit::__private::Throttled::pipelined(
                    #dev,
                    &SPEC,
                    THROTTLE_ROLES,
                    #opts,
                    &::warpfit::__private::LaunchConfig::default(),
                    #n,
                    #glen,
                    graph,
                    ::std::vec![#(#owned_args),*],
                    #cpu_fn,
                )?;
                ::core::result::Result::Ok(Throttle { inner })
            }
        }
    }

    /// A 2-D kernel's `throttle(device, options, n_rows, <gathered>_rows,
    /// <count>, shape arrays)` (host slices, uploaded) and
    /// `throttle_resident(..)` (`DeviceVec`s, copied on the device): the
    /// plan is over rows, a gathered element is a row of `<count>` values,
    /// and it is made on the device (no work graph).
    fn build_columns(&self, count: usize) -> TokenStream {
        let n = plumbing("n_rows");
        let count_param = &self.k.params[count];
        let (kn, kt) = (&count_param.name, ty(count_param.ty));
        let rows = quote::format_ident!("{}_rows", self.k.params[self.first_gathered()].name);
        let cpu = self.cpu_helper();
        let name = self.k.name.to_string();
        let doc = format!(
            "Makes the throttled handle of the 2-D kernel `{name}` on `device` ([`Throttle::launch`]).\n\n# Parameters\n- `device`: where to run (on the CPU backend every policy runs the CPU twin)\n- `options`: the schedule and cache ([`throttle_options`] gives the attribute's defaults); a 2-D kernel runs `auto` (by the cost model), `org` or `cf`\n- `n_rows`: the launches compute rows `0..n_rows`, each of `{kn}` columns\n- `{rows}`: the rows of {g}, each of `{kn}` elements (passed at each launch): a cache-fit partition holds whole rows, so its capacity is the cache over `{kn}` elements\n- `{kn}`: the column count every launch passes\n- the arrays that shape the work: {shape}\n\nThe plan (column blocks of the gathered rows, each row's fine tasks grouped by block) is made on the device at the first launch, from the handle's copies of these arrays. Throttling reorders each row's fine tasks: `{name}`'s reduce operator must be commutative and associative.\n\n# Errors\nInvalid options, a policy other than `auto`, `org` and `cf`, `ThrottleOptions::exhaustive` or remapping, a zero `{kn}` or one whose rows overflow, arrays that do not match the kernel, device errors.",
            g = self.gathered_names(),
            shape = self
                .shape_params()
                .map(|(_, p)| format!("`{}`", p.name))
                .collect::<Vec<_>>()
                .join(", "),
        );
        let resident_doc = "[`throttle`] over arrays already on the CUDA device: the handle copies them on the device, with no host copy.\n\n# Errors\nA CPU device, arrays of another device; as [`throttle`].";
        let sizes = quote!(#n: usize, #rows: usize, #kn: #kt);
        let args = quote!((#n, #rows, #kn as u64));
        let constructor = |name: &str, doc: &str, form: ArrayForm<'_>| {
            self.constructor(name, doc, (&sizes, &args), "columns", form)
        };
        let host = constructor(
            "throttle",
            &doc,
            ArrayForm {
                param: &|t| quote!(&[#t]),
                entry: &|n| quote!(::warpfit::__private::Arg::input(#n)),
                list: &|e| quote!(&[#(#e),*]),
            },
        );
        let resident = constructor("throttle_resident", resident_doc, ArrayForm::RESIDENT);
        quote!(#cpu #host #resident)
    }

    /// The per-launch parameters as `launch` declares them: host slices or
    /// `DeviceVec`s behind the `Input` / `Output` traits, scalars by value.
    fn launch_params(&self) -> Vec<TokenStream> {
        self.per_launch()
            .map(|(_, p)| {
                let (n, t) = (&p.name, ty(p.ty));
                match p.kind {
                    ParamKind::Input => {
                        quote!(#n: &(impl ::warpfit::__private::Input<#t> + ?::core::marker::Sized))
                    }
                    ParamKind::Output => {
                        quote!(#n: &mut (impl ::warpfit::__private::Output<#t> + ?::core::marker::Sized))
                    }
                    ParamKind::Scalar => quote!(#n: #t),
                    ParamKind::Shared | ParamKind::Worklist => unreachable!("{SCATTERS}"),
                }
            })
            .collect()
    }

    /// The per-launch parameters as `enqueue` declares them: `DeviceVec`s.
    fn resident_params(&self) -> Vec<TokenStream> {
        self.per_launch()
            .map(|(_, p)| {
                let (n, t) = (&p.name, ty(p.ty));
                match p.kind {
                    ParamKind::Input | ParamKind::Output => {
                        quote!(#n: &::warpfit::__private::DeviceVec<#t>)
                    }
                    ParamKind::Scalar => quote!(#n: #t),
                    ParamKind::Shared | ParamKind::Worklist => unreachable!("{SCATTERS}"),
                }
            })
            .collect()
    }

    /// The `Arg`s `launch` passes on.
    fn launch_args(&self) -> Vec<TokenStream> {
        self.per_launch()
            .map(|(_, p)| {
                let n = &p.name;
                match p.kind {
                    ParamKind::Input => quote!(::warpfit::__private::Arg::from_input(#n)),
                    ParamKind::Output => quote!(::warpfit::__private::Arg::from_output(#n)),
                    ParamKind::Scalar => quote!(::warpfit::__private::Arg::scalar(#n)),
                    ParamKind::Shared | ParamKind::Worklist => unreachable!("{SCATTERS}"),
                }
            })
            .collect()
    }

    /// The `Arg`s `enqueue` passes on. Enqueued launches take their outputs
    /// by shared borrow, as `prepare` does: an iterative driver keeps
    /// prepared launches that read the same vectors, and the device orders
    /// the accesses.
    fn resident_args(&self) -> Vec<TokenStream> {
        self.per_launch()
            .map(|(_, p)| {
                let n = &p.name;
                match p.kind {
                    ParamKind::Input => quote!(::warpfit::__private::Arg::resident_input(#n)),
                    ParamKind::Output => quote!(::warpfit::__private::Arg::resident_output(#n)),
                    ParamKind::Scalar => quote!(::warpfit::__private::Arg::scalar(#n)),
                    ParamKind::Shared | ParamKind::Worklist => unreachable!("{SCATTERS}"),
                }
            })
            .collect()
    }

    /// The typed handle: `launch` takes the per-launch parameters.
    fn handle(&self) -> TokenStream {
        let name = self.k.name.to_string();
        let params = self.launch_params();
        let resident = self.resident_params();
        let args = self.launch_args();
        let resident_args = self.resident_args();
        let names: Vec<String> = self
            .per_launch()
            .map(|(_, p)| format!("`{}`", p.name))
            .collect();
        let doc = format!(
            "Throttled launches of `{name}` over one plan, made by [`throttle`]. Not `Sync`: one launch at a time."
        );
        let launch_doc = format!(
            "Runs `{name}` once with {}: `DeviceVec`s of the handle's device are used in place (a launch with \
             other `DeviceVec`s than the last prepares the schedule again, a few milliseconds: keep the same ones \
             in a loop); host slices are copied into the handle's own device buffers, and outputs copied back. \
             The chosen schedule runs (`auto` decides on the first launch after the plan, timing every schedule; \
             a remapped one permutes the arrays in and out on the device). Waits for the device.\n\n\
             # Errors\nArguments of the wrong length for the kernel's indices (an index fault), a `DeviceVec` of \
             another device, the kernel's faults, device errors.",
            names.join(", ")
        );
        quote! {
            #[doc = #doc]
            #[derive(Debug)]
            pub struct Throttle {
                inner: ::warpfit::__private::Throttled,
            }

            impl Throttle {
                #[doc = #launch_doc]
                pub fn launch(&mut self, #(#params),*) -> ::warpfit::__private::Result<()> {
                    self.inner.launch(&mut [#(#args),*])
                }

                /// [`Throttle::launch`] over `DeviceVec`s that does not wait: a fault is
                /// reported by [`Throttle::check`] (or the next waiting launch). The launch
                /// that lays a new plan out and profiles it waits anyway. Outputs are shared
                /// borrows, as in `prepare`: the launch writes device memory in stream order,
                /// so prepared launches reading the same vectors may be held meanwhile.
                ///
                /// # Errors
                /// As [`Throttle::launch`], without the kernel's faults.
                pub fn enqueue(&mut self, #(#resident),*) -> ::warpfit::__private::Result<()> {
                    self.inner.enqueue(&mut [#(#resident_args),*])
                }

                /// [`Throttle::enqueue`] over arrays in [`Throttle::plan_order`]'s numbering.
                ///
                /// # Errors
                /// As [`Throttle::launch_in_plan_order`], without the kernel's faults.
                pub fn enqueue_in_plan_order(&mut self, #(#resident),*) -> ::warpfit::__private::Result<()> {
                    self.inner.enqueue_in_plan_order(&mut [#(#resident_args),*])
                }

                /// Waits for the launches enqueued so far and reports the first fault.
                ///
                /// # Errors
                /// The kernel's fault, device errors.
                pub fn check(&self) -> ::warpfit::__private::Result<()> {
                    self.inner.check()
                }

                /// The numbering of a remapped schedule, once chosen: `tasks[new] = old`,
                /// `gathered[new] = old` (one permutation when there are as many tasks as
                /// gathered elements). `None` for a schedule in the kernel's own numbering.
                pub fn plan_order(&self) -> ::core::option::Option<::warpfit::__private::PlanOrder<'_>> {
                    self.inner.plan_order()
                }

                /// The level order `auto` chose on the device, copied into vectors of
                /// the caller's (`order[new] = old`, `position[old] = new`), so that an
                /// application can renumber the rest of its work by it without making it
                /// again. `None` for any other plan, or before the choice.
                ///
                /// # Errors
                /// Device memory for the copies, device errors.
                pub fn device_level_order(
                    &self,
                ) -> ::warpfit::__private::Result<::core::option::Option<::warpfit::__private::DeviceLevelOrder>> {
                    self.inner.device_level_order()
                }

                /// The caller's verdict on a level order left to it
                /// (`ThrottleOptions::caller_renumbers`): its renumbered launch ran slower
                /// than `org`'s timed run, so the handle goes on with `org` and the plan
                /// cache says so. Does nothing where no order was left to the caller.
                ///
                /// # Errors
                /// Device errors while keying the plan cache's entry.
                pub fn reject_level_order(&mut self) -> ::warpfit::__private::Result<()> {
                    self.inner.reject_level_order()
                }

                /// [`Throttle::launch`] over arrays already in [`Throttle::plan_order`]'s
                /// numbering: no permutation in or out, so that an iterative application
                /// converts its vectors once.
                ///
                /// # Errors
                /// No remapped schedule chosen yet; as [`Throttle::launch`].
                pub fn launch_in_plan_order(&mut self, #(#params),*) -> ::warpfit::__private::Result<()> {
                    self.inner.launch_in_plan_order(&mut [#(#args),*])
                }

                /// What planning found and which schedule runs.
                pub fn report(&self) -> &::warpfit::__private::ThrottleReport {
                    self.inner.report()
                }

                /// Waits for the plan cache's writes in progress (a level order kept
                /// beside its entry is written on a thread of its own while the launches
                /// go on); dropping the handle waits too, without saying.
                ///
                /// # Errors
                /// The order could not be kept (its folder cannot be written, or the
                /// device failed reading it back); the launches are not affected.
                pub fn wait_for_plan_cache(&mut self) -> ::warpfit::__private::Result<()> {
                    self.inner.wait_for_plan_cache()
                }

                /// Where the plan is: being made (launches run unthrottled), made and
                /// about to be profiled (`auto`), or running a schedule.
                pub fn status(&self) -> ::warpfit::__private::ThrottleStatus {
                    self.inner.status()
                }

                /// Waits for a pipelined plan, so that the next launch runs it.
                ///
                /// # Errors
                /// The planner's errors, device errors.
                pub fn wait_for_plan(&mut self) -> ::warpfit::__private::Result<()> {
                    self.inner.wait_for_plan()
                }

                /// Runs `plan` from the first launch on instead of letting `auto`'s
                /// cost model decide (`auto` on a CUDA device, before the first launch):
                /// a plan known to suit these arrays, made on the device.
                ///
                /// # Errors
                /// Another policy or backend, or a choice already made.
                pub fn pin_device_plan(&mut self, plan: ::warpfit::DevicePlan) -> ::warpfit::__private::Result<()> {
                    self.inner.pin_device_plan(plan)
                }
            }
        }
    }
}
