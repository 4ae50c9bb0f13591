//! `named_enum!`: the API's closed sets of names (chains, protocols, statuses, ...).

/// A closed set of lowercase names, parsed and printed the same way everywhere.
macro_rules! named_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum $name {
            $(#[serde(rename = $text)] $variant),+
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// The accepted names, for error messages.
            pub fn names() -> String {
                [$($text),+].join(", ")
            }
        }

        impl std::str::FromStr for $name {
            type Err = ();

            /// Exact, case-sensitive match: `Active` is not `active`.
            fn from_str(s: &str) -> Result<Self, ()> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err(()),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
