//! One macro for the enums stored and shown by name: `as_str`, `ALL`,
//! `FromStr` and `Display` from a single table, so a stored name and its
//! variant can never drift apart.

/// `names!(Type "what it is" { Variant => "name", … })`.
macro_rules! names {
    ($ty:ident $what:literal { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $ty {
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];

            pub const fn as_str(self) -> &'static str {
                match self { $($ty::$variant => $name),+ }
            }
        }

        impl ::std::str::FromStr for $ty {
            type Err = String;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::ALL
                    .iter()
                    .copied()
                    .find(|v| v.as_str() == s)
                    .ok_or_else(|| format!(concat!("unknown ", $what, " {:?}"), s))
            }
        }

        impl ::std::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

pub(crate) use names;
