//! The text of classes and call sites, made once per `&'static` address
//! and interned as small integer symbols.

use std::collections::HashMap;
use std::panic::Location;

use crate::class::{format_location, Class, Role};

use super::{ClassInfo, RecordKey};
use crate::recorder::shard::Shard;

/// An interned string: an index into [`Names`]. Equal symbols are equal
/// text and the other way round.
pub(crate) type Sym = u32;

/// A map keyed by addresses and symbols, private to the recorder: fast
/// hashing, no need for the default hasher's DoS resistance.
pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// Which `Class` values share an id and parent: the name by address and
/// length (or the creation site by address) and the role.
type ClassKey = (usize, usize, Role);

/// The formatted text of classes and locations, made once per address.
#[derive(Default)]
pub(crate) struct Names {
    /// The text of each symbol.
    text: Vec<String>,
    by_text: HashMap<String, Sym>,
    /// `&'static Location` address to `file:line:column`.
    locations: FastMap<usize, Sym>,
    /// Class to (id, parent).
    classes: FastMap<ClassKey, (Sym, Option<Sym>)>,
    last_class: Option<(ClassKey, (Sym, Option<Sym>))>,
    /// `"(other)"`, the holder spill slot.
    other: Option<Sym>,
    /// The position of each symbol's text in sorted order; recomputed when
    /// text was added since.
    pub(super) rank: Vec<u32>,
}

impl Names {
    fn intern(&mut self, s: String) -> Sym {
        if let Some(&sym) = self.by_text.get(s.as_str()) {
            return sym;
        }
        let sym = Sym::try_from(self.text.len()).expect("fewer than 2^32 distinct names");
        self.text.push(s.clone());
        self.by_text.insert(s, sym);
        sym
    }

    pub(super) fn location(&mut self, l: &'static Location<'static>) -> Sym {
        let addr = l as *const Location<'static> as usize;
        if let Some(&sym) = self.locations.get(&addr) {
            return sym;
        }
        let sym = self.intern(format_location(l));
        self.locations.insert(addr, sym);
        sym
    }

    pub(super) fn class(&mut self, class: &Class) -> (Sym, Option<Sym>) {
        let key = match class.name {
            Some(n) => (n.as_ptr() as usize, n.len(), class.role),
            None => (
                class.created_at as *const Location<'static> as usize,
                usize::MAX,
                class.role,
            ),
        };
        // Entries of one class tend to come one after another.
        if let Some((last, names)) = self.last_class {
            if last == key {
                return names;
            }
        }
        let names = match self.classes.get(&key) {
            Some(&names) => names,
            None => {
                let id = self.intern(class.id());
                let parent = class.parent().map(|p| self.intern(p));
                self.classes.insert(key, (id, parent));
                (id, parent)
            }
        };
        self.last_class = Some((key, names));
        names
    }

    pub(super) fn other(&mut self) -> Sym {
        match self.other {
            Some(sym) => sym,
            None => {
                let sym = self.intern("(other)".to_string());
                self.other = Some(sym);
                sym
            }
        }
    }

    pub(super) fn text(&self, sym: Sym) -> &str {
        &self.text[sym as usize]
    }

    /// Brings the sort rank of every symbol up to date: comparing ranks
    /// compares the text.
    pub(super) fn ranks(&mut self) {
        if self.rank.len() != self.text.len() {
            let text = &self.text;
            let mut order: Vec<Sym> = (0..text.len() as Sym).collect();
            order.sort_unstable_by(|&a, &b| text[a as usize].cmp(&text[b as usize]));
            self.rank = vec![0; order.len()];
            for (rank, &sym) in order.iter().enumerate() {
                self.rank[sym as usize] = rank as u32;
            }
        }
    }
}

/// The keys of the entries of live shards, by shard address, each with
/// its entry's address. A shard's entries are never removed or moved
/// while it is live, and it is forgotten when its thread retires it.
#[derive(Default)]
pub(crate) struct KeyCache {
    pub(super) shards: FastMap<usize, Vec<(usize, RecordKey, ClassInfo)>>,
}

impl KeyCache {
    /// Forgets a shard that is no longer live.
    pub(crate) fn forget(&mut self, shard: &Shard) {
        self.shards.remove(&(shard as *const Shard as usize));
    }
}
