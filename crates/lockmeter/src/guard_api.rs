//! The parts of the lock and guard APIs that every primitive repeats,
//! written once as macros and stamped out per type, as lock_api does for
//! its guards.
//!
//! They are macros, not generic functions, because what repeats is public
//! API: inherent methods with their own names, docs and signatures on each
//! lock and guard type. A trait over the guards would still need one
//! method per type to keep parking_lot's call syntax
//! (`MutexGuard::map(g, f)`), and would add a public-looking layer.
//! Everything here expands to exactly the code it replaced; nothing is on
//! an acquisition or release path.

/// `map`, `try_map` and `try_map_or_err` of a guard that derefs to `T`.
///
/// The data pointer is taken through the guard's `Deref` (`&T as *const`)
/// or `DerefMut` (`&mut T as *mut`), then the guard becomes the mapped
/// guard with its own `fn into_mapped(s: Self, data: *const/*mut U)`, so
/// the hold carries over. `$mapped<$($gen),*>` names the mapped guard type
/// before its data parameter; the impl block must have the lifetime `'a`.
macro_rules! map_fns {
    (
        $(#[$doc:meta])*
        $mapped:ident<$($gen:ident),*>, &mut T as *mut
    ) => {
        map_fns!(@ (mut) $(#[$doc])* $mapped<$($gen),*>, *mut);
    };
    (
        $(#[$doc:meta])*
        $mapped:ident<$($gen:ident),*>, &T as *const
    ) => {
        map_fns!(@ () $(#[$doc])* $mapped<$($gen),*>, *const);
    };
    (
        @ ($($mut:ident)?) $(#[$map_doc:meta])* $mapped:ident<$($gen:ident),*>, *$ptr:tt
    ) => {
        $(#[$map_doc])*
        pub fn map<U: ?Sized, F>($($mut)? s: Self, f: F) -> $mapped<'a, $($gen,)* U>
        where
            F: FnOnce(&$($mut)? T) -> &$($mut)? U,
        {
            let data: *$ptr U = f(&$($mut)? *s);
            Self::into_mapped(s, data)
        }

        /// Like [`map`](Self::map), giving the guard back when `f` finds nothing.
        #[allow(clippy::result_large_err)]
        pub fn try_map<U: ?Sized, F>(
            $($mut)? s: Self,
            f: F,
        ) -> Result<$mapped<'a, $($gen,)* U>, Self>
        where
            F: FnOnce(&$($mut)? T) -> Option<&$($mut)? U>,
        {
            let Some(data) = f(&$($mut)? *s) else { return Err(s) };
            let data: *$ptr U = data;
            Ok(Self::into_mapped(s, data))
        }

        /// Like [`try_map`](Self::try_map), returning `f`'s error beside the guard.
        #[allow(clippy::type_complexity)]
        pub fn try_map_or_err<U: ?Sized, F, E>(
            $($mut)? s: Self,
            f: F,
        ) -> Result<$mapped<'a, $($gen,)* U>, (Self, E)>
        where
            F: FnOnce(&$($mut)? T) -> Result<&$($mut)? U, E>,
        {
            let data: *$ptr U = match f(&$($mut)? *s) {
                Ok(data) => data,
                Err(e) => return Err((s, e)),
            };
            Ok(Self::into_mapped(s, data))
        }
    };
}

/// A timed pair: the same method once with a timeout (`_for`, an
/// `R::Duration`) and once with a deadline (`_until`, an `R::Instant`).
///
/// The two differ only in their name, docs, the limit's name and type, and
/// the raw lock's method that waits; so the body is written once. In it,
/// `$wait` is that raw method as a function (`R::try_lock_for`, ...) and
/// `$limit` the limit argument. Generics go in `[...]`; the parameters
/// before the limit in the first `(...)`, those after it in the second.
macro_rules! timed_pair {
    (
        $(#[$for_doc:meta])*
        fn $for:ident($for_arg:ident: $for_ty:ty) = $for_wait:path;
        $(#[$until_doc:meta])*
        fn $until:ident($until_arg:ident: $until_ty:ty) = $until_wait:path;
        $(#[$attr:meta])*
        pub fn [$($gen:tt)*] ($($pre:tt)*) limit ($($post:tt)*) -> $ret:ty,
        |$wait:ident, $limit:ident| $body:block
    ) => {
        $(#[$for_doc])*
        $(#[$attr])*
        pub fn $for<$($gen)*>($($pre)* $for_arg: $for_ty $($post)*) -> $ret {
            let ($wait, $limit) = ($for_wait, $for_arg);
            $body
        }

        $(#[$until_doc])*
        $(#[$attr])*
        pub fn $until<$($gen)*>($($pre)* $until_arg: $until_ty $($post)*) -> $ret {
            let ($wait, $limit) = ($until_wait, $until_arg);
            $body
        }
    };
}

/// `Debug` and `Display` of guards: both show the data, as lock_api's and
/// std's guards do. Each entry is `[generics before T] Guard<..., T>`; `T`
/// gets the `?Sized + Debug` (or `Display`) bound.
macro_rules! fmt_as_data {
    ($([$($gen:tt)*] $guard:ty),* $(,)?) => {$(
        impl<$($gen)* T: ?Sized + ::std::fmt::Debug> ::std::fmt::Debug for $guard {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                ::std::fmt::Debug::fmt(&**self, f)
            }
        }
        impl<$($gen)* T: ?Sized + ::std::fmt::Display> ::std::fmt::Display for $guard {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                ::std::fmt::Display::fmt(&**self, f)
            }
        }
    )*};
}

/// `From<T>` and `Default` of locks, through `new`, so that the lock's
/// class is the caller's site (`#[track_caller]`). Each entry is
/// `[generics before T] Lock<..., T> => from's parameter name`.
macro_rules! from_and_default {
    ($([$($gen:tt)*] $lock:ty => $value:ident),* $(,)?) => {$(
        impl<$($gen)* T> From<T> for $lock {
            #[track_caller]
            fn from($value: T) -> Self {
                Self::new($value)
            }
        }
        impl<$($gen)* T: Default> Default for $lock {
            #[track_caller]
            fn default() -> Self {
                Self::new(T::default())
            }
        }
    )*};
}

/// `new` and `named` of a metered lock with a `const fn from_class`: the
/// class is the creation site, or `name` (see `Class`).
macro_rules! class_constructors {
    (new: $(#[$new_doc:meta])* named: $(#[$named_doc:meta])*) => {
        $(#[$new_doc])*
        #[track_caller]
        pub const fn new(value: T) -> Self {
            let site = ::std::panic::Location::caller();
            Self::from_class($crate::class::Class::new(None, site), value)
        }

        $(#[$named_doc])*
        #[track_caller]
        pub const fn named(name: &'static str, value: T) -> Self {
            let site = ::std::panic::Location::caller();
            Self::from_class($crate::class::Class::new(Some(name), site), value)
        }
    };
}
