//! Lock classes: which instances aggregate into one row.

use std::panic::Location;

use lockmeter_model::LockKind;

/// What part of a primitive a lock is. Inner locks of a compound primitive
/// (a semaphore's spinlock and wait queue) are named after the outer one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Role {
    /// The primitive the user created.
    Own,
    /// The lock inside a compound primitive: `<outer>.lock`.
    InnerLock,
    /// The wait queue inside a compound primitive: `<outer>.wait`.
    InnerWait,
}

impl Role {
    fn suffix(self) -> &'static str {
        match self {
            Role::Own => "",
            Role::InnerLock => ".lock",
            Role::InnerWait => ".wait",
        }
    }
}

/// The identity of a lock class, stored in every instance.
///
/// All instances created at one site, or given one name, are one class,
/// so memory grows with classes and call sites, not instances.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Class {
    pub(crate) name: Option<&'static str>,
    pub(crate) created_at: &'static Location<'static>,
    pub(crate) role: Role,
}

impl Class {
    pub(crate) const fn new(
        name: Option<&'static str>,
        created_at: &'static Location<'static>,
    ) -> Class {
        Class {
            name,
            created_at,
            role: Role::Own,
        }
    }

    /// The class of a lock inside this one.
    pub(crate) const fn inner(self, role: Role) -> Class {
        Class { role, ..self }
    }

    /// The class id of the outer primitive.
    pub(crate) fn base_id(&self) -> String {
        match self.name {
            Some(n) => n.to_string(),
            None => format_location(self.created_at),
        }
    }

    /// The class id shown in snapshots.
    pub(crate) fn id(&self) -> String {
        format!("{}{}", self.base_id(), self.role.suffix())
    }

    /// The outer primitive's id, for inner locks.
    pub(crate) fn parent(&self) -> Option<String> {
        (self.role != Role::Own).then(|| self.base_id())
    }
}

/// `file:line:column`, the form call sites take in snapshots.
pub(crate) fn format_location(l: &Location<'_>) -> String {
    format!("{}:{}:{}", l.file(), l.line(), l.column())
}

/// The kind recorded for a class, with the acquisition mode of rwlocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Mode {
    Exclusive,
    Read,
    Write,
    /// An rwlock's upgradable read.
    Upgradable,
}

impl Mode {
    pub(crate) fn label(self) -> Option<&'static str> {
        match self {
            Mode::Exclusive => None,
            Mode::Read => Some("read"),
            Mode::Write => Some("write"),
            Mode::Upgradable => Some("upgradable"),
        }
    }

    /// The mode's place in the order of its [`Mode::label`] as text (no
    /// label first), so that sorting by it sorts as the labels do: a cheap
    /// key for the snapshot's sort (checked by a test).
    pub(crate) fn label_order(self) -> u8 {
        match self {
            Mode::Exclusive => 0,
            Mode::Read => 1,
            Mode::Upgradable => 2,
            Mode::Write => 3,
        }
    }

    /// The mode's bits in the third word of a raw site key
    /// (`meter::Meta::raw_key`): the caller's part of that word, which the
    /// lock's own part (its role and kind) leaves free.
    #[inline(always)]
    pub(crate) const fn key_bits(self) -> usize {
        (self as usize) << 2
    }
}

/// The bits [`Mode::key_bits`] may set.
pub(crate) const MODE_KEY_BITS: usize = 0b11 << 2;

/// Everything the recorder needs to know about one (class, site, mode).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SiteKey {
    pub(crate) class: Class,
    pub(crate) kind: LockKind,
    pub(crate) site: &'static Location<'static>,
    pub(crate) mode: Mode,
}
