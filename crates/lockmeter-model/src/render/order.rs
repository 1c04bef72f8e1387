//! The row order shared by every table: filter, sort, nest, cut.
//!
//! Locks form a forest through their `parent` field (`pipe.sem.lock` under
//! `pipe.sem`). Top-level locks are sorted by the chosen key; each is
//! followed by its nested locks, sorted the same way. A `parent` that
//! names no lock in the snapshot, names the lock itself or loops, is
//! ignored, so every lock is shown exactly once whatever the input.

use std::cmp::Ordering;
use std::collections::HashMap;

use super::{SortKey, TableOptions};
use crate::{LockStats, SiteStats, Snapshot};

/// One lock in display order, with how deeply it is nested.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LockRow<'a> {
    /// The lock of this row.
    pub lock: &'a LockStats,
    /// 0 for a top-level lock, 1 for a lock inside it, and so on.
    pub depth: usize,
}

/// The locks to show, in display order: filtered by `opts.filter`, sorted
/// by `opts.sort`, nested locks right after their parent, cut to
/// `opts.top` top-level locks.
pub fn sorted_locks<'a>(snap: &'a Snapshot, opts: &TableOptions) -> Vec<&'a LockStats> {
    sorted_lock_rows(snap, opts)
        .into_iter()
        .map(|r| r.lock)
        .collect()
}

/// [`sorted_locks`] with each lock's nesting depth, for indenting.
pub fn sorted_lock_rows<'a>(snap: &'a Snapshot, opts: &TableOptions) -> Vec<LockRow<'a>> {
    let (rows, _) = lock_order(snap, opts);
    rows.into_iter()
        .filter_map(|(i, depth)| snap.locks.get(i).map(|lock| LockRow { lock, depth }))
        .collect()
}

/// Display order as `(index into snap.locks, depth)`, and which locks
/// passed the filter (what a `*TOTAL*` row sums).
pub(crate) fn lock_order(snap: &Snapshot, opts: &TableOptions) -> (Vec<(usize, usize)>, Vec<bool>) {
    let needle = needle(opts);
    let nodes: Vec<TreeNode<'_>> = snap
        .locks
        .iter()
        .map(|l| {
            let key = opts.sort.value(&l.total, snap.window.elapsed_ns);
            let sites = l.sites.iter().map(|s| s.site.as_str());
            TreeNode::new(&l.id, l.parent.as_deref(), l.name(), key)
                .filtered(needle.as_deref(), sites)
        })
        .collect();
    order_tree(&nodes, opts)
}

/// The call sites of `lock` (in a snapshot over `elapsed_ns`) sorted by
/// `opts.sort`; ties (and [`SortKey::Name`]) by site, then mode.
pub fn sorted_sites<'a>(
    lock: &'a LockStats,
    elapsed_ns: u64,
    opts: &TableOptions,
) -> Vec<&'a SiteStats> {
    let mut sites: Vec<&SiteStats> = lock.sites.iter().collect();
    sites.sort_by(|a, b| {
        let by_name = || a.key().cmp(&b.key());
        if opts.sort == SortKey::Name {
            directed(by_name(), opts.descending)
        } else {
            let (ka, kb) = (
                opts.sort.value(&a.stats, elapsed_ns),
                opts.sort.value(&b.stats, elapsed_ns),
            );
            directed(ka.total_cmp(&kb), opts.descending).then_with(by_name)
        }
    });
    sites
}

/// The lowercased filter text, if any.
pub(crate) fn needle(opts: &TableOptions) -> Option<String> {
    opts.filter.as_deref().map(str::to_lowercase)
}

/// Case-insensitive substring test against an already lowercased needle.
fn contains(hay: &str, needle_lower: &str) -> bool {
    hay.to_lowercase().contains(needle_lower)
}

/// What [`order_tree`] needs to know about one row.
pub(crate) struct TreeNode<'a> {
    pub id: &'a str,
    pub parent: Option<&'a str>,
    pub name: &'a str,
    /// The sort value (ignored when sorting by name).
    pub key: f64,
    /// Passed the filter by itself.
    pub matches: bool,
}

impl<'a> TreeNode<'a> {
    /// A row that passes the filter, sorted by `key`.
    pub fn new(id: &'a str, parent: Option<&'a str>, name: &'a str, key: f64) -> TreeNode<'a> {
        TreeNode {
            id,
            parent,
            name,
            key,
            matches: true,
        }
    }

    /// The filter rule of every table: a row passes by itself if its id,
    /// its name or any of its call `sites` contains `needle` (already
    /// lowercased); without a needle, every row does.
    pub fn filtered<'s>(
        mut self,
        needle: Option<&str>,
        mut sites: impl Iterator<Item = &'s str>,
    ) -> TreeNode<'a> {
        self.matches = needle.is_none_or(|n| {
            contains(self.id, n) || contains(self.name, n) || sites.any(|s| contains(s, n))
        });
        self
    }
}

/// Orders a forest of nodes for display; see the module doc. Returns
/// `(index, depth)` in display order and, per node, whether it passed the
/// filter (itself or through an ancestor).
pub(crate) fn order_tree(
    nodes: &[TreeNode<'_>],
    opts: &TableOptions,
) -> (Vec<(usize, usize)>, Vec<bool>) {
    let parent = effective_parents(nodes);

    // A node is visible if it or any ancestor matched. Parents come first
    // in this walk because it goes from the roots down.
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    let mut roots = Vec::new();
    for (i, p) in parent.iter().enumerate() {
        match p {
            Some(p) => children[*p].push(i),
            None => roots.push(i),
        }
    }
    let mut visible = vec![false; nodes.len()];
    let mut stack: Vec<(usize, bool)> = roots.iter().map(|&r| (r, false)).collect();
    while let Some((i, inherited)) = stack.pop() {
        visible[i] = inherited || nodes[i].matches;
        stack.extend(children[i].iter().map(|&c| (c, visible[i])));
    }

    // Shown at the top level: visible nodes whose parent is not shown.
    let mut top: Vec<usize> = (0..nodes.len())
        .filter(|&i| visible[i] && parent[i].is_none_or(|p| !visible[p]))
        .collect();
    sort_nodes(&mut top, nodes, opts);
    if let Some(n) = opts.top {
        top.truncate(n);
    }

    let mut out = Vec::new();
    let mut stack: Vec<(usize, usize)> = top.iter().rev().map(|&i| (i, 0)).collect();
    while let Some((i, depth)) = stack.pop() {
        out.push((i, depth));
        let mut kids: Vec<usize> = children[i]
            .iter()
            .copied()
            .filter(|&c| visible[c])
            .collect();
        sort_nodes(&mut kids, nodes, opts);
        stack.extend(kids.iter().rev().map(|&c| (c, depth.saturating_add(1))));
    }
    (out, visible)
}

/// Each node's parent index, or `None` when the parent is missing, is the
/// node itself, or the chain of parents never reaches a top-level node.
fn effective_parents(nodes: &[TreeNode<'_>]) -> Vec<Option<usize>> {
    let mut by_id: HashMap<&str, usize> = HashMap::new();
    for (i, n) in nodes.iter().enumerate() {
        by_id.entry(n.id).or_insert(i);
    }
    let link: Vec<Option<usize>> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            n.parent
                .and_then(|p| by_id.get(p).copied())
                .filter(|&p| p != i)
        })
        .collect();

    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Unknown,
        OnPath,
        Rooted,
        Loops,
    }
    let mut state = vec![State::Unknown; nodes.len()];
    for start in 0..nodes.len() {
        let mut path = Vec::new();
        let mut cur = start;
        let rooted = loop {
            match state[cur] {
                State::Rooted => break true,
                State::Loops | State::OnPath => break false,
                State::Unknown => {}
            }
            state[cur] = State::OnPath;
            path.push(cur);
            match link[cur] {
                None => break true,
                Some(p) => cur = p,
            }
        };
        for p in path {
            state[p] = if rooted { State::Rooted } else { State::Loops };
        }
    }
    link.iter()
        .zip(&state)
        .map(|(l, s)| if *s == State::Rooted { *l } else { None })
        .collect()
}

/// Sorts node indices by the key (or name), ties by name then id.
fn sort_nodes(idx: &mut [usize], nodes: &[TreeNode<'_>], opts: &TableOptions) {
    idx.sort_by(|&a, &b| {
        let (a, b) = (&nodes[a], &nodes[b]);
        let by_name = || a.name.cmp(b.name).then_with(|| a.id.cmp(b.id));
        if opts.sort == SortKey::Name {
            directed(by_name(), opts.descending)
        } else {
            directed(a.key.total_cmp(&b.key), opts.descending).then_with(by_name)
        }
    });
}

fn directed(o: Ordering, descending: bool) -> Ordering {
    if descending {
        o.reverse()
    } else {
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node<'a>(id: &'a str, parent: Option<&'a str>, key: f64) -> TreeNode<'a> {
        TreeNode::new(id, parent, id, key)
    }

    fn order(nodes: &[TreeNode<'_>], opts: &TableOptions) -> Vec<(String, usize)> {
        order_tree(nodes, opts)
            .0
            .into_iter()
            .map(|(i, d)| (nodes[i].id.to_string(), d))
            .collect()
    }

    #[test]
    fn children_follow_their_parent_sorted() {
        let nodes = [
            node("b", None, 1.0),
            node("a.x", Some("a"), 1.0),
            node("a", None, 5.0),
            node("a.y", Some("a"), 3.0),
        ];
        let got = order(&nodes, &TableOptions::default());
        let want = [("a", 0), ("a.y", 1), ("a.x", 1), ("b", 0)];
        assert_eq!(got, want.map(|(s, d)| (s.to_string(), d)));
    }

    #[test]
    fn loops_and_self_parents_become_top_level() {
        let nodes = [
            node("a", Some("b"), 1.0),
            node("b", Some("a"), 2.0),
            node("c", Some("c"), 3.0),
        ];
        let got = order(&nodes, &TableOptions::default());
        assert_eq!(got.len(), 3);
        assert!(got.iter().all(|(_, d)| *d == 0), "{got:?}");
    }

    #[test]
    fn filter_keeps_nested_locks_of_a_match_and_top_cuts_top_level() {
        let mut nodes = vec![
            node("p", None, 1.0),
            node("p.lock", Some("p"), 9.0),
            node("q", None, 2.0),
        ];
        nodes[1].matches = false;
        nodes[2].matches = false;
        let got = order(&nodes, &TableOptions::default());
        assert_eq!(got, vec![("p".to_string(), 0), ("p.lock".to_string(), 1)]);

        let all = [
            node("p", None, 1.0),
            node("p.lock", Some("p"), 9.0),
            node("q", None, 2.0),
        ];
        let opts = TableOptions {
            top: Some(1),
            ..TableOptions::default()
        };
        assert_eq!(order(&all, &opts), vec![("q".to_string(), 0)]);
    }
}
