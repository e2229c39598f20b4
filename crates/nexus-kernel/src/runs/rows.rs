//! The run's rows as one unit of work sees them (runs.md §1, §5): [`Graph`] (rows and edges,
//! the whole run or a settle's neighbourhood), [`Rows`] (rows by id for a request build or a
//! read), and the questions asked of them: readiness, and the final logical work a key names.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use nexus_store::{AroundSettled, EdgeKind, EdgeRow, OnFailure, TaskEndRow, TaskKind, TaskRow, TaskStatus, Tx};

use crate::error::KernelResult;

/// The run's end-of-run read ([`Tx::tasks_if_quiescent`]'s answer) when a unit read it ahead
/// of its use; `None`: not read ahead.
pub type Prefetched = Option<Option<Vec<TaskEndRow>>>;

/// The run's tasks and edges as one transaction sees them.
pub(crate) struct Graph {
    pub tasks: Vec<TaskRow>,
    index: HashMap<i64, usize>,
    /// task id → the ids it depends on.
    deps: HashMap<i64, Vec<i64>>,
    /// task id → the ids that depend on it.
    dependents: HashMap<i64, Vec<i64>>,
    /// Tasks started in this transaction (a model task's job is inserted once).
    pub(super) started: HashSet<i64>,
    /// Every row and edge of the run ([`Graph::load`]), not a neighbourhood.
    whole: bool,
}

impl Graph {
    pub async fn load(tx: &mut Tx, run_id: i64) -> KernelResult<Graph> {
        let tasks = tx.tasks_of_run(run_id).await?;
        let edges = tx.edges_of_run(run_id).await?;
        let mut g = Graph::new(tasks, &edges);
        g.whole = true;
        Ok(g)
    }

    /// Whether this is the whole run ([`Graph::load`]) rather than a neighbourhood.
    pub fn is_whole(&self) -> bool {
        self.whole
    }

    /// Whether a cascade from the settled rows `settled` provably stays inside this graph (the
    /// caller has checked that no kernel-held wait observes rows of the run, and that every
    /// dependent of a settled row is here with all its dependencies): no waiting dependent is
    /// an await or blocked (a skip cascades further).
    pub fn contains_cascade(&self, settled: &[i64]) -> bool {
        settled.iter().all(|&id| {
            self.dependents_of(id).into_iter().all(|d| match self.get(d) {
                None => false,
                Some(t) if t.status != TaskStatus::Waiting => true,
                Some(t) => t.kind != TaskKind::Await && !matches!(readiness(self, d), Readiness::Blocked),
            })
        })
    }

    /// The rows a settle of `task` can reach without leaving them: `task`, its dependents and
    /// their dependencies. `None` (load the whole graph) unless the cascade provably stays
    /// inside: no kernel-held wait observes rows in the run, and no waiting dependent is an
    /// await or blocked (a skip cascades further).
    ///
    /// With the graph comes the run's end-of-run read when `task` has no dependent, as the run
    /// stood after the settle (`None`: not read): a cascade with nothing to ready writes
    /// nothing, so it is what [`Kernel::end_if_quiescent`] would read next. Both it and the
    /// dependents' rows come with the edges when the store can send them together
    /// (`Tx::around_settled`); a dependent it did not read is read here.
    pub async fn load_around(tx: &mut Tx, run_id: i64, task: &TaskRow) -> KernelResult<Option<(Graph, Prefetched)>> {
        let AroundSettled {
            edges,
            quiescence: quiet,
            dependents: mut read,
        } = tx.around_settled(task).await?;
        let Some(mut edges) = edges else {
            return Ok(None);
        };
        let mut dependents: Vec<i64> = edges.iter().map(|e| e.task_id).collect();
        dependents.dedup();
        let mut seen = HashSet::from([task.id]);
        let mut tasks = vec![task.clone()];
        for &d in &dependents {
            // One read per dependent: its row and the rows it depends on.
            let mut rows = match read.remove(&d) {
                Some(rows) => rows,
                None => tx.task_and_deps(d).await?,
            };
            let Some(at) = rows.iter().position(|t| t.id == d) else {
                return Ok(None);
            };
            let row = rows.remove(at);
            for dep in &rows {
                edges.push(EdgeRow {
                    task_id: d,
                    depends_on_id: dep.id,
                    // This read does not name the kind, and the graph does not read it.
                    kind: EdgeKind::After,
                });
            }
            for t in std::iter::once(row).chain(rows) {
                if t.run_id != run_id {
                    return Ok(None);
                }
                if seen.insert(t.id) {
                    tasks.push(t);
                }
            }
        }
        edges.sort_by(|a, b| (a.task_id, a.depends_on_id, &a.kind).cmp(&(b.task_id, b.depends_on_id, &b.kind)));
        edges.dedup_by(|a, b| (a.task_id, a.depends_on_id, &a.kind) == (b.task_id, b.depends_on_id, &b.kind));
        let g = Graph::new(tasks, &edges);
        Ok(g.contains_cascade(&[task.id]).then_some((g, quiet)))
    }

    pub fn new(tasks: Vec<TaskRow>, edges: &[EdgeRow]) -> Graph {
        let index = tasks.iter().enumerate().map(|(i, t)| (t.id, i)).collect();
        let mut g = Graph {
            tasks,
            index,
            deps: HashMap::new(),
            dependents: HashMap::new(),
            started: HashSet::new(),
            whole: false,
        };
        for e in edges {
            g.add_edge(e.task_id, e.depends_on_id);
        }
        g
    }

    pub fn add_edge(&mut self, task_id: i64, depends_on_id: i64) {
        let d = self.deps.entry(task_id).or_default();
        if !d.contains(&depends_on_id) {
            d.push(depends_on_id);
            self.dependents.entry(depends_on_id).or_default().push(task_id);
        }
    }

    /// Replaces (or adds) a row.
    pub fn put(&mut self, task: &TaskRow) {
        match self.index.get(&task.id) {
            Some(&i) => self.tasks[i] = task.clone(),
            None => {
                self.index.insert(task.id, self.tasks.len());
                self.tasks.push(task.clone());
            }
        }
    }

    pub fn get(&self, id: i64) -> Option<&TaskRow> {
        self.index.get(&id).map(|&i| &self.tasks[i])
    }

    pub fn by_key(&self, key: &str) -> Option<&TaskRow> {
        self.tasks.iter().find(|t| t.key == key)
    }

    pub fn deps_of(&self, id: i64) -> &[i64] {
        self.deps.get(&id).map_or(&[], Vec::as_slice)
    }

    pub fn dependents_of(&self, id: i64) -> Vec<i64> {
        self.dependents.get(&id).cloned().unwrap_or_default()
    }

    /// Every ancestor of `id` (transitively), excluding `id`.
    pub fn ancestors(&self, id: i64) -> HashSet<i64> {
        let mut seen = HashSet::new();
        let mut stack = self.deps_of(id).to_vec();
        while let Some(d) = stack.pop() {
            if seen.insert(d) {
                stack.extend_from_slice(self.deps_of(d));
            }
        }
        seen
    }
}

/// The run's rows by id, for one request build: owned, or borrowed from a loaded graph (the
/// expansion check reads the rows its transaction already holds, without copying them).
pub(crate) struct Rows<'a> {
    pub tasks: Cow<'a, [TaskRow]>,
    index: HashMap<i64, usize>,
}

impl<'a> Rows<'a> {
    pub fn new(tasks: impl Into<Cow<'a, [TaskRow]>>) -> Rows<'a> {
        let tasks = tasks.into();
        let index = tasks.iter().enumerate().map(|(i, t)| (t.id, i)).collect();
        Rows { tasks, index }
    }

    pub fn get(&self, id: i64) -> Option<&TaskRow> {
        self.index.get(&id).map(|&i| &self.tasks[i])
    }

    pub fn by_key(&self, key: &str) -> Option<&TaskRow> {
        self.tasks.iter().find(|t| t.key == key)
    }

    /// The fan of `round`: its tool rows, in creation order.
    pub fn fan_of(&self, round: &TaskRow) -> Vec<&TaskRow> {
        self.tasks
            .iter()
            .filter(|t| t.kind == TaskKind::Tool && t.declaring_task_id == Some(round.id))
            .collect()
    }

    /// The final logical work `key` names: a round followed along its continuations, a
    /// paired call to its child, a `delegate_task` call to its branch
    /// ([`next_logical`]).
    pub fn follow(&self, key: &str) -> Option<&TaskRow> {
        let mut t = self.by_key(key)?;
        for _ in 0..4096 {
            match next_logical(&self.tasks, t, |k| self.by_key(k)) {
                Some(c) => t = c,
                None => break,
            }
        }
        Some(t)
    }
}

/// Whether a settled dependency lets its dependents run: a completion, an `absorb` failure,
/// or an abandoned failure (runs.md §6: abandoning accepts the failure, so a step appended
/// after it runs and reads it; rows it skipped before stay skipped).
fn satisfies(dep: &TaskRow) -> bool {
    match dep.status {
        TaskStatus::Completed => true,
        TaskStatus::Skipped => false,
        _ => {
            dep.on_failure == OnFailure::Absorb
                || dep.failure_resolution == Some(nexus_store::FailureResolution::Abandoned)
        }
    }
}

/// Whether a waiting row can start, must be skipped, or waits for more settles.
pub(crate) enum Readiness {
    NotYet,
    Ready,
    Blocked,
}

pub(crate) fn readiness(g: &Graph, id: i64) -> Readiness {
    let mut blocked = false;
    for &d in g.deps_of(id) {
        let Some(dep) = g.get(d) else { continue };
        if !dep.status.is_settled() {
            return Readiness::NotYet;
        }
        if !satisfies(dep) {
            blocked = true;
        }
    }
    if blocked { Readiness::Blocked } else { Readiness::Ready }
}

/// The final logical work a key names (kernel-tools.md §1): a round that expanded is followed
/// along its continuation chain; a completed call that pairs with a child is followed to the
/// child; a `delegate_task` call row is followed to its branch.
pub(crate) fn follow<'g>(g: &'g Graph, key: &str) -> Option<&'g TaskRow> {
    let mut t = g.by_key(key)?;
    for _ in 0..4096 {
        match next_logical(&g.tasks, t, |k| g.by_key(k)) {
            Some(c) => t = c,
            None => return Some(t),
        }
    }
    Some(t)
}

/// One step of [`follow`]: the continuation of a round, the paired child of a completed call,
/// or the branch root of a `delegate_task` call row.
pub(crate) fn next_logical<'g>(
    tasks: &'g [TaskRow],
    t: &TaskRow,
    by_key: impl Fn(&str) -> Option<&'g TaskRow>,
) -> Option<&'g TaskRow> {
    if t.kind == TaskKind::Model {
        return tasks
            .iter()
            .find(|c| c.kind == TaskKind::Model && c.declaring_task_id == Some(t.id));
    }
    if t.kind == TaskKind::Tool && t.status == TaskStatus::Completed {
        if let Some(child) = t.pairs_with.as_deref() {
            return by_key(child).filter(|c| c.id != t.id);
        }
        return tasks.iter().find(|c| {
            c.kind == TaskKind::Model && c.declaring_task_id == Some(t.id) && c.branch_of.as_deref() == Some(&t.key)
        });
    }
    None
}
