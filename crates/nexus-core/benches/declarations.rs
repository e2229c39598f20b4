//! Declaration benchmarks: validate + render + sort a 1,000-entry declaration with 20 aliases,
//! its canonical-size walk alone (the 1 MiB bound), the same through the full assembly, its
//! provider projection, and 10,000 call resolutions.
//!
//! `cargo bench -p nexus-core --bench declarations`

use criterion::{BatchSize, Criterion, black_box, criterion_group, criterion_main};
use nexus_core::declaration::{
    AssemblyInput, Resolver, assemble, assemble_owned, check_bound, project, validate_declaration,
    validate_declaration_owned,
};
use serde_json::{Value, json};

use nexus_core::fixtures::{RUNNER, declaration_1000 as declaration};

fn benches(c: &mut Criterion) {
    let raw = Value::Array(declaration());
    let stored = validate_declaration(&raw, "/tools").expect("the bench declaration is valid");
    assert_eq!(stored.len(), 1000);

    // The door owns its parsed body, so the owned entry points are what it calls; the input
    // copy is made in setup, outside the timing.
    let list = raw.as_array().unwrap().clone();
    c.bench_function("validate_render_sort_1000_entries_20_aliases", |b| {
        b.iter_batched(
            || list.clone(),
            |l| validate_declaration_owned(l, "/tools").unwrap(),
            BatchSize::SmallInput,
        )
    });
    c.bench_function("validate_render_sort_1000_entries_20_aliases_borrowed", |b| {
        b.iter(|| validate_declaration(black_box(&raw), "/tools").unwrap())
    });
    // The floor of the owned pass: one walk of every node of the set, which the bound needs.
    c.bench_function("canonical_size_1000_entries", |b| {
        b.iter(|| check_bound(black_box(&stored), "/tools").unwrap())
    });

    let runner = uuid::Uuid::parse_str(RUNNER).unwrap();
    let served: Vec<Value> = (0..1000)
        .filter(|i| i % 4 == 0)
        .map(|i| json!({"name": format!("served_{i}"), "effect_profile": {}}))
        .collect();
    let input = AssemblyInput {
        entries: raw.clone(),
        default_runner_executor_public_id: Some(runner),
        runners: vec![nexus_core::declaration::RunnerFacts {
            public_id: runner,
            display_name: "bench".into(),
            eligible: true,
            served_tools: Value::Array(served),
            environment: json!({"os": "linux"}),
            documents: json!([]),
        }],
        ..AssemblyInput::default()
    };
    assemble(&input).expect("the bench assembly is valid");
    c.bench_function("assemble_1000_entries_20_aliases", |b| {
        b.iter_batched(|| input.clone(), |i| assemble_owned(i).unwrap(), BatchSize::SmallInput)
    });
    c.bench_function("assemble_1000_entries_20_aliases_borrowed", |b| {
        b.iter(|| assemble(black_box(&input)).unwrap())
    });

    c.bench_function("project_1000_entries", |b| b.iter(|| project(black_box(&stored), &[])));

    let names: Vec<String> = stored
        .iter()
        .filter_map(|e| nexus_core::declaration::callable_of(e).map(str::to_string))
        .collect();
    let args = json!({"prompt": "x", "run_in_background": false, "path": "a", "name": "s"});
    c.bench_function("resolve_10000_calls", |b| {
        b.iter(|| {
            let resolver = Resolver::new(black_box(&stored));
            for k in 0..10_000 {
                black_box(resolver.resolve(&names[k % names.len()], &args));
            }
        })
    });
}

criterion_group!(declarations, benches);
criterion_main!(declarations);
