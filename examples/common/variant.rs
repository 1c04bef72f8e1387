//! [`seed_enum!`]: the enums that name what a seed compares (its variants,
//! keyed's placements).

/// Defines a closed set of choices with everything the harness needs from
/// one: `ALL` in the order the tables and figures show them, a
/// file-name-safe `name()` that is also the serde name (dump files, JSON
/// results), and a `Display` label for humans. Each choice is written as
/// `Choice = ("name", "label")`; further derives (e.g. `clap::ValueEnum`)
/// go in the attributes.
macro_rules! seed_enum {
    (
        $(#[$meta:meta])*
        pub enum $enum:ident {
            $( $(#[$vmeta:meta])* $choice:ident = ($name:literal, $label:literal), )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
        pub enum $enum {
            $( $(#[$vmeta])* #[serde(rename = $name)] $choice, )+
        }

        impl $enum {
            pub const ALL: [$enum; [$($name),+].len()] = [$($enum::$choice),+];

            /// File-name-safe name, the same as the serde name.
            pub fn name(self) -> &'static str {
                match self {
                    $( $enum::$choice => $name, )+
                }
            }
        }

        impl std::fmt::Display for $enum {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(match self {
                    $( $enum::$choice => $label, )+
                })
            }
        }
    };
}
