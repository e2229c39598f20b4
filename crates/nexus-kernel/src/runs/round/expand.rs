//! Expansion (runs.md §7): the round number, the fan `r{n}t{i}` and the continuation `r{n}`
//! with its chain facts; waiters on the round follow the continuation.

use std::collections::HashSet;

use nexus_store::{
    EdgeKind, NewTask, OnFailure, Origin, RoundFactsRow, StoreError, TaskKind, TaskRow, TaskStatus, Tx, Visibility,
};
use serde_json::{Value, json};

use crate::Kernel;
use crate::error::KernelResult;
use crate::runs::round::chain::StoredRound;
use crate::runs::rows::Graph;
use crate::runs::settle::SettleError;
use crate::runs::unit::Unit;

/// How many round numbers one key probe tries.
pub(crate) const KEY_WINDOW: u64 = 4;

/// `r{n}` and its fan keys `r{n}t0 … r{n}t{fan-1}`.
pub(crate) fn round_keys(n: u64, fan: usize) -> impl Iterator<Item = String> {
    std::iter::once(format!("r{n}")).chain((0..fan).map(move |i| format!("r{n}t{i}")))
}

/// The smallest n ≥ 1 whose round and fan keys are all unused (runs.md §7 step 1), and a floor
/// for the next allocation (every `r{m}` below it is in use once `r{n}` is).
pub(crate) fn pick_round_number(used: &HashSet<&str>, fan: usize) -> (u64, i64) {
    let n = (1u64..)
        .find(|&n| round_keys(n, fan).all(|k| !used.contains(k.as_str())))
        .expect("some n is free");
    let floor = (1u64..)
        .find(|&m| m != n && !used.contains(format!("r{m}").as_str()))
        .expect("some m is free");
    (n, floor as i64)
}

impl Kernel {
    /// The round number of an expansion with `fan` calls, and the floor to store for the
    /// next one: probed upwards from `floor` (every `r{m}` below it is in use), else read from
    /// the run's keys (`g`, or every key of the run).
    pub(crate) async fn round_number(
        &self,
        tx: &mut Tx,
        run_id: i64,
        fan: usize,
        floor: Option<i64>,
        g: Option<&Graph>,
    ) -> KernelResult<(u64, i64)> {
        let Some(floor) = floor.filter(|_| g.is_none()) else {
            let keys: Vec<String> = match g {
                Some(g) => g.tasks.iter().map(|t| t.key.clone()).collect(),
                None => tx.task_keys_of_run(run_id).await?,
            };
            let used: HashSet<&str> = keys.iter().map(String::as_str).collect();
            return Ok(pick_round_number(&used, fan));
        };
        let base = floor.max(1) as u64;
        // r_used[j]: `r{base + j}` is in use.
        let mut r_used: Vec<bool> = Vec::new();
        let picked = loop {
            let start = base + r_used.len() as u64;
            let window: Vec<String> = (start..start + KEY_WINDOW).flat_map(|n| round_keys(n, fan)).collect();
            let used: HashSet<String> = tx.used_task_keys(run_id, &window).await?.into_iter().collect();
            let mut found = None;
            for n in start..start + KEY_WINDOW {
                r_used.push(used.contains(&format!("r{n}")));
                if found.is_none() && round_keys(n, fan).all(|k| !used.contains(&k)) {
                    found = Some(n);
                }
            }
            if let Some(n) = found {
                break n;
            }
        };
        let next_floor = (0..r_used.len() as u64)
            .map(|j| base + j)
            .find(|&m| m != picked && !r_used[(m - base) as usize])
            .unwrap_or(base + r_used.len() as u64);
        #[cfg(debug_assertions)]
        {
            let keys = tx.task_keys_of_run(run_id).await?;
            let used: HashSet<&str> = keys.iter().map(String::as_str).collect();
            let (n, _) = pick_round_number(&used, fan);
            assert_eq!(n, picked, "the probed round number differs from the smallest free one");
            assert!(
                (1..next_floor).all(|m| m == picked || used.contains(format!("r{m}").as_str())),
                "the key floor {next_floor} is above a free round number"
            );
        }
        Ok((picked, next_floor as i64))
    }

    /// Authors the fan `r{n}t{i}` and the continuation `r{n}` (runs.md §7) with the
    /// continuation's chain facts, into `g` as well. Returns the ids of the rows failed at
    /// birth.
    pub(crate) async fn expand(
        &self,
        u: &mut Unit<'_>,
        g: &mut Graph,
        round: &TaskRow,
        plan: &Expansion<'_>,
    ) -> KernelResult<Vec<i64>> {
        let fan_on_failure = OnFailure::parse(plan.fan_on_failure)
            .ok_or_else(|| StoreError::Corrupt(format!("a frozen fan_on_failure holds {:?}", plan.fan_on_failure)))?;
        let fan = insert_fan(u, g, round, plan, fan_on_failure).await?;
        let continuation = insert_continuation(u, g, round, plan, &fan.members).await?;
        if plan.has_dependents {
            follow_continuation(u.tx, g, round, &fan.members, continuation.id).await?;
        }
        let mut keys = fan.keys;
        keys.push(format!("r{}", plan.n));
        if u.run.deliverable_task_id == Some(round.id) {
            u.run.deliverable_task_id = Some(continuation.id);
            u.tx.update_run(u.run).await?;
        }
        self.emit(
            &mut Unit::of(u.tx, u.run, u.now, u.effects),
            nexus_store::EventKind::TasksAppended,
            None,
            json!({"keys": keys, "origin": "model"}),
        )
        .await?;
        self.fail_births(u, g, fan.rows, plan.planned).await
    }

    /// Birth failures: authored, then failed in the same transaction. Returns their ids.
    async fn fail_births(
        &self,
        u: &mut Unit<'_>,
        g: &mut Graph,
        rows: Vec<TaskRow>,
        planned: &[PlannedCall],
    ) -> KernelResult<Vec<i64>> {
        let mut births = Vec::new();
        for (mut row, p) in rows.into_iter().zip(planned) {
            if let Some((error, detail)) = &p.birth
                && self
                    .settle_with_error(
                        u.tx,
                        u.run,
                        &mut row,
                        TaskStatus::Failed,
                        SettleError::new(error, detail.clone()),
                        u.now,
                    )
                    .await?
            {
                g.put(&row);
                births.push(row.id);
            }
        }
        Ok(births)
    }
}

/// The fan an expansion inserted: its rows, their ids and keys, in call order.
struct Fan {
    rows: Vec<TaskRow>,
    members: Vec<i64>,
    keys: Vec<String>,
}

/// Inserts the fan `r{n}t{i}`, each member after the round.
async fn insert_fan(
    u: &mut Unit<'_>,
    g: &mut Graph,
    round: &TaskRow,
    plan: &Expansion<'_>,
    on_failure: OnFailure,
) -> KernelResult<Fan> {
    let n = plan.n;
    let mut fan = Fan {
        rows: Vec::with_capacity(plan.planned.len()),
        members: Vec::with_capacity(plan.planned.len()),
        keys: Vec::with_capacity(plan.planned.len() + 1),
    };
    for (i, p) in plan.planned.iter().enumerate() {
        let key = format!("r{n}t{i}");
        let row =
            u.tx.insert_task(NewTask {
                run_id: u.run.id,
                key: key.clone(),
                kind: TaskKind::Tool,
                status: TaskStatus::Waiting,
                generation: 1,
                origin: Origin::Model,
                on_failure,
                visibility: Visibility::Collapsed,
                mainline: round.mainline,
                branch_of: round.branch_of.clone(),
                declaring_task_id: Some(round.id),
                tool_name: Some(p.tool_name.clone()),
                tool_alias: p.tool_alias.clone(),
                tool_input: Some(serde_json::to_string(&p.tool_input).expect("input serializes")),
                tool_call_id: Some(p.call_id.clone()),
                target_executor_id: p.target_executor_id,
                created_at: u.now,
                ..Default::default()
            })
            .await?;
        u.tx.put_edge(row.id, round.id, EdgeKind::After).await?;
        g.put(&row);
        g.add_edge(row.id, round.id);
        fan.members.push(row.id);
        fan.keys.push(key);
        fan.rows.push(row);
    }
    Ok(fan)
}

/// Inserts the continuation `r{n}` after every fan member, with its chain facts.
async fn insert_continuation(
    u: &mut Unit<'_>,
    g: &mut Graph,
    round: &TaskRow,
    plan: &Expansion<'_>,
    members: &[i64],
) -> KernelResult<TaskRow> {
    let continuation =
        u.tx.insert_task(NewTask {
            run_id: u.run.id,
            key: format!("r{}", plan.n),
            kind: TaskKind::Model,
            status: TaskStatus::Waiting,
            generation: 1,
            origin: Origin::Model,
            on_failure: round.on_failure,
            visibility: round.visibility,
            mainline: round.mainline,
            branch_of: round.branch_of.clone(),
            declaring_task_id: Some(round.id),
            frozen_context: round.frozen_context.clone(),
            request_surface: round.request_surface.clone(),
            created_at: u.now,
            ..Default::default()
        })
        .await?;
    g.put(&continuation);
    for &m in members {
        u.tx.put_edge(continuation.id, m, EdgeKind::After).await?;
        g.add_edge(continuation.id, m);
    }
    let facts = &plan.facts;
    u.tx.put_round_facts(&RoundFactsRow {
        task_id: continuation.id,
        chain_rounds: facts.rounds,
        key_floor: facts.key_floor,
        history: serde_json::to_string(facts.history).expect("a history serializes"),
    })
    .await?;
    Ok(continuation)
}

/// Waiters on the round follow the continuation.
async fn follow_continuation(
    tx: &mut Tx,
    g: &mut Graph,
    round: &TaskRow,
    members: &[i64],
    continuation: i64,
) -> KernelResult<()> {
    let edges = tx.edges_into(round.id).await?;
    for e in edges
        .iter()
        .filter(|e| e.depends_on_id == round.id && !members.contains(&e.task_id))
    {
        if e.task_id != continuation && tx.insert_edge(e.task_id, continuation, e.kind).await? {
            g.add_edge(e.task_id, continuation);
        }
    }
    Ok(())
}

/// One planned fan member.
pub(crate) struct PlannedCall {
    pub(crate) call_id: String,
    pub(crate) tool_name: String,
    pub(crate) tool_input: Value,
    pub(crate) tool_alias: Option<String>,
    pub(crate) target_executor_id: Option<i64>,
    pub(crate) birth: Option<(&'static str, Option<String>)>,
}

/// One expansion, as the reply step planned it.
pub(crate) struct Expansion<'a> {
    pub(crate) planned: &'a [PlannedCall],
    /// The round number (`r{n}`, `r{n}t{i}`).
    pub(crate) n: u64,
    /// The chain's fan policy.
    pub(crate) fan_on_failure: &'a str,
    /// Some row depends on the round (its waiters follow the continuation).
    pub(crate) has_dependents: bool,
    pub(crate) facts: ChainFacts<'a>,
}

/// What an expansion stores for its continuation.
pub(crate) struct ChainFacts<'a> {
    /// The expanding round's chain length.
    pub(crate) rounds: i64,
    pub(crate) key_floor: i64,
    /// The expanding round's look-back.
    pub(crate) history: &'a [StoredRound],
}
