//! Loops compiled in a library crate, for the bench's `library` rows.
//!
//! The bench's own loops are an executable's code, where a thread-local
//! of another crate is read in one instruction and no call; most of a
//! program's locks sit in library crates (its own and its dependencies),
//! where the same read was a call to `__tls_get_addr` until session 25,
//! and where generic lock code is instantiated with the library's code
//! model. These loops show what such callers pay (`docs/performance.md`,
//! "Session 25"). Each is the main rows' tight loop: the lock's address
//! stays in a register.

/// `n` lock-increment-unlock cycles of a bare parking_lot Mutex.
#[inline(never)]
pub fn parking_lot_mutex(m: &parking_lot::Mutex<u64>, n: u64) {
    for _ in 0..n {
        *m.lock() += 1;
    }
}

/// The same on lockmeter's Mutex.
#[inline(never)]
pub fn mutex(m: &lockmeter::Mutex<u64>, n: u64) {
    for _ in 0..n {
        *m.lock() += 1;
    }
}

/// `n` cycles of a bare parking_lot FairMutex.
#[inline(never)]
pub fn parking_lot_fair_mutex(m: &parking_lot::FairMutex<u64>, n: u64) {
    for _ in 0..n {
        *m.lock() += 1;
    }
}

/// The same on lockmeter's FairMutex.
#[inline(never)]
pub fn fair_mutex(m: &lockmeter::FairMutex<u64>, n: u64) {
    for _ in 0..n {
        *m.lock() += 1;
    }
}

/// `n` read-lock-and-unlock cycles of a bare parking_lot RwLock.
#[inline(never)]
pub fn parking_lot_rwlock_read(l: &parking_lot::RwLock<u64>, n: u64) {
    for _ in 0..n {
        std::hint::black_box(*l.read());
    }
}

/// The same on lockmeter's RwLock.
#[inline(never)]
pub fn rwlock_read(l: &lockmeter::RwLock<u64>, n: u64) {
    for _ in 0..n {
        std::hint::black_box(*l.read());
    }
}
