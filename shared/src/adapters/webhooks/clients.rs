//! AWS clients built at their first use instead of at init: most invocations of most
//! functions never queue a delivery or seal a secret, and building a client costs the cold
//! start its endpoint rules and TLS roots (`docs/figures/coldstart.md`).

use std::sync::OnceLock;

type Make<C> = Box<dyn Fn() -> C + Send + Sync>;

/// A client made by `make` the first time it is asked for, then kept.
pub struct OnFirstUse<C> {
    make: Make<C>,
    client: OnceLock<C>,
}

impl<C> OnFirstUse<C> {
    pub fn new(make: impl Fn() -> C + Send + Sync + 'static) -> Self {
        OnFirstUse {
            make: Box::new(make),
            client: OnceLock::new(),
        }
    }

    /// A client built already (the tests'), used as it is.
    pub fn built(client: C) -> Self {
        let lazy = OnFirstUse::new(|| unreachable!("built already"));
        let _ = lazy.client.set(client);
        lazy
    }

    pub fn get(&self) -> &C {
        self.client.get_or_init(|| (self.make)())
    }
}
