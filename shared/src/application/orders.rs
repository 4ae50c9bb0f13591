//! Opening and closing on chain: the create with a `wallet` (the mint built at the pool's fresh
//! state with the approvals the wallet's allowances call for), the close of a wallet position
//! (its withdraw built, or a pending open cancelled), each transaction run on the chain's latest
//! block before it is answered, and the hash the wallet sent recorded (which the sync follows).
//! The service builds and follows; the owner's wallet signs.

use crate::application::app::{Allowed, App, OrderChain};
use crate::application::error::{Outcome, UseCaseError};
use crate::application::inputs::OrderLimits;
use crate::application::keys::{keep_shown, Answering};
use crate::application::ports::StoreError;
use crate::domain::calldata::PoolKey;
use crate::domain::catalog::{hook_returns_deltas, Catalog, Pool};
use crate::domain::holdings::{entry, valued_at_pool};
use crate::domain::lifecycle::unfunded_close;
use crate::domain::market::PoolState;
use crate::domain::math::Amounts;
use crate::domain::math::U256;
use crate::domain::model::PositionEntry;
use crate::domain::model::{
    Chain, ChainOrder, OrderKind, Position, Protocol, Status, TransactionRequest, WalletHolding,
};
use crate::domain::orders::build::held_venue;
use crate::domain::orders::build::{open_transactions, protocol_tokens, withdraw_transaction};
use crate::domain::orders::permit::to_signature;
use crate::domain::orders::settle::CANCELLED;
use crate::domain::orders::simulation::{annotate, Credit, Known, Simulated, SimulationError};
use crate::domain::orders::v4::{
    decrease_transaction as v4_decrease_transaction, mint_transactions as v4_mint_transactions,
    pool_key, Permit2Allowance, V4Decrease,
};
use crate::domain::orders::{plan_mint, venue, OrderTerms, Venue};
use crate::domain::valuation::{TokenPair, ValuationError};
use crate::domain::wallets::address::canonical;
use crate::domain::wallets::WalletKind;
use chrono::{DateTime, Utc};

/// The pool's state if it is fresh: a transaction is only ever built at one.
pub(crate) fn fresh_state<'a>(
    catalog: &Catalog,
    pool: &'a Pool,
    now: DateTime<Utc>,
) -> Outcome<&'a PoolState> {
    pool.state
        .as_ref()
        .filter(|state| !catalog.freshness.is_stale(Some(state), now))
        .ok_or_else(|| {
            UseCaseError::MarketStale(
                "the pool's market state is stale: transactions are only built at a fresh \
                 state; retry after the next sync"
                    .into(),
            )
        })
}

/// The catalog's pool of `position`, or 503 while it is not synced.
pub(crate) fn position_pool<'a>(catalog: &'a Catalog, position: &Position) -> Outcome<&'a Pool> {
    catalog
        .find(position.chain, position.protocol, &position.pool)
        .ok_or_else(|| {
            UseCaseError::MarketStale(
                "the position's pool is not synced yet: retry after the next sync".into(),
            )
        })
}

pub(crate) fn venue_of(catalog: &Catalog, pool: &Pool) -> Result<Venue, UseCaseError> {
    venue(catalog, pool).ok_or_else(|| {
        UseCaseError::bad_request(format!(
            "no {} deployment that opens positions on this pool is known on {}: positions \
             there cannot be opened or closed on chain",
            pool.protocol, pool.chain
        ))
    })
}

/// The deployment a wallet position acts through (its own position manager's), or 400.
pub(crate) fn held_venue_of(
    catalog: &Catalog,
    pool: &Pool,
    holding: &WalletHolding,
) -> Result<Venue, UseCaseError> {
    held_venue(catalog, pool, holding).ok_or_else(|| {
        UseCaseError::bad_request(format!(
            "no {} deployment of position manager {} is known on {}: the position cannot be \
             acted on from here",
            pool.protocol, holding.manager, pool.chain
        ))
    })
}

/// The reads of `chain` transactions are built and simulated with.
pub(crate) fn order_chain(app: &App, chain: Chain) -> Result<&dyn OrderChain, UseCaseError> {
    app.order_chain.as_deref().ok_or_else(|| {
        UseCaseError::MarketStale(format!(
            "{chain} cannot be read from here: transactions are only built where they can be \
             simulated on the chain"
        ))
    })
}

/// `transactions` once run on the chain's latest block (decision 55), with their gas
/// and the amounts they move; a revert answers 409 with its reason (never stored as an
/// idempotency key's answer: funding the wallet or a new price may well make it pass).
pub(crate) async fn simulated(
    chain: &dyn OrderChain,
    pool: &Pool,
    transactions: Vec<TransactionRequest>,
    known: Known<'_>,
) -> Result<Vec<TransactionRequest>, UseCaseError> {
    simulated_with(chain, pool, (transactions, &[]), known).await
}

/// `simulated`, each run seeing what `credits` pay the wallet before it (a move's withdrawal
/// before the zap that spends it).
pub(crate) async fn simulated_with(
    chain: &dyn OrderChain,
    pool: &Pool,
    (transactions, credits): (Vec<TransactionRequest>, &[Credit]),
    known: Known<'_>,
) -> Result<Vec<TransactionRequest>, UseCaseError> {
    let runs = runs(chain, pool, &transactions, credits).await?;
    annotate(pool, transactions, &runs, known).map_err(UseCaseError::MarketStale)
}

/// The runs of `transactions` on the chain's latest block, in order; a revert is 409 with its
/// reason, a chain that cannot run them 503.
pub(crate) async fn runs(
    chain: &dyn OrderChain,
    pool: &Pool,
    transactions: &[TransactionRequest],
    credits: &[Credit],
) -> Result<Vec<Simulated>, UseCaseError> {
    match chain.simulate(pool.chain, transactions, credits).await {
        Ok(runs) => Ok(runs),
        Err(refused @ SimulationError::Reverted { .. }) => Err(UseCaseError::Contended(format!(
            "{refused}: nothing was stored and nothing is given to sign"
        ))),
        Err(SimulationError::Unavailable(reason)) => Err(UseCaseError::MarketStale(reason)),
    }
}

/// The caller's linked wallet on `chain` spelled as `address` (its canonical spelling).
pub(crate) async fn linked_wallet(
    app: &App,
    owner: &str,
    chain: Chain,
    address: &str,
) -> Result<String, UseCaseError> {
    let not_linked = || {
        UseCaseError::bad_request(format!(
            "wallet {address} is not linked to you on {chain}: link it first (POST /wallets)"
        ))
    };
    let wallet = canonical(chain, address).map_err(|_| not_linked())?;
    let linked = app.wallets.wallets(owner).await?;
    let held = linked
        .iter()
        .find(|w| w.chain == chain && w.address == wallet)
        .ok_or_else(not_linked)?;
    signed(held.kind)?;
    Ok(wallet)
}

/// 403 for a wallet only watched: nothing is built for a wallet that has not signed.
fn signed(kind: WalletKind) -> Result<(), UseCaseError> {
    if kind == WalletKind::Watched {
        return Err(UseCaseError::Forbidden(
            "this wallet is only watched: link this wallet by signature to act from it \
             (POST /wallets/challenge, then POST /wallets)"
                .into(),
        ));
    }
    Ok(())
}

/// 403 when the wallet holding `position` is only watched by its owner (one read of the
/// owner's wallets).
pub(crate) async fn acting_from(app: &App, position: &Position) -> Result<(), UseCaseError> {
    let Some(holding) = position.holding.as_deref() else {
        return Ok(());
    };
    let wallets = app.wallets.wallets(&position.owner).await?;
    let held = wallets
        .iter()
        .find(|w| w.chain == position.chain && w.address == holding.wallet);
    held.map_or(Ok(()), |w| signed(w.kind))
}

/// The create of `offer` (pending, its range snapped) from `wallet`: the mint sized at the
/// pool's fresh state, the approvals it needs, the order the sync then follows.
pub async fn open_on_chain(
    app: &App,
    (catalog, pool): (&Catalog, &Pool),
    offer: Position,
    offered: TokenPair,
    (wallet, limits): &(String, OrderLimits),
) -> Result<Position, UseCaseError> {
    if pool.chain == Chain::Solana {
        return Err(UseCaseError::bad_request(
            "opening Orca positions from the API is not supported yet: open it from your \
             wallet, and linking the wallet (POST /wallets) tracks it",
        ));
    }
    let wallet = linked_wallet(app, &offer.owner, pool.chain, wallet).await?;
    let state = fresh_state(catalog, pool, offer.created_at)?;
    let venue = venue_of(catalog, pool)?;
    let chain = order_chain(app, pool.chain)?;
    let ticks = (offer.tick_lower, offer.tick_upper);
    let plan = plan_mint(pool, ticks, offered, limits.slippage_bps).map_err(|e| match e {
        ValuationError::Rejected(message) => UseCaseError::Conflict(message),
        other => other.into(),
    })?;
    let tokens = protocol_tokens(pool).map(|t| t.address.as_str());
    let asked = Allowed {
        chain: pool.chain,
        state,
        owner: &wallet,
        spender: &venue.manager,
        tokens,
    };
    let terms = OrderTerms {
        venue: &venue,
        wallet: &wallet,
        height: state.height,
        slippage_bps: limits.slippage_bps,
        deadline_seconds: limits.deadline_seconds,
        now: offer.created_at,
    };
    let mut permit = None;
    let (transactions, known, deposit) = if pool.protocol == Protocol::UniswapV4 {
        // `MINT_POSITION` of the plan's liquidity, paid through Permit2 (decision 67).
        refuse_hooked(pool)?;
        let key = v4_key(pool)?;
        let read = chain.permit2_allowances(&asked).await;
        let allowances = allowances_read(read, pool.chain, "Permit2 allowances")?;
        let (built, taken) =
            v4_mint_transactions(pool, &terms, &key, (ticks, plan.liquidity), &allowances)
                .map_err(UseCaseError::internal)?;
        let known = Known {
            paid: Some(taken),
            ..Known::default()
        };
        permit = limits.permit_signature.then_some((tokens, allowances));
        let [amount0, amount1] = taken;
        (
            built,
            known,
            pool.to_api_order(Amounts { amount0, amount1 }),
        )
    } else {
        transactions_only(limits)?;
        let allowances = allowances_read(chain.allowances(&asked).await, pool.chain, "allowances")?;
        let built = open_transactions(
            pool,
            &venue,
            &wallet,
            ticks,
            &plan,
            allowances,
            terms.deadline(),
        )
        .map_err(UseCaseError::internal)?;
        (built, Known::default(), plan.deposit)
    };
    let transactions = simulated(chain, pool, transactions, known).await?;
    Ok(Position {
        liquidity: plan.liquidity,
        cost_basis_usd: pool.value_of(&deposit),
        deposit: Some(deposit),
        order: Some(Box::new(with_permit(
            &terms,
            OrderKind::Open,
            transactions,
            permit,
        ))),
        ..offer
    })
}

/// The terms of an order built now at `state` for `wallet` (an open's, or for a position the
/// wallet holds), its time to the millisecond as positions keep it.
pub(crate) fn held_terms<'a>(
    venue: &'a Venue,
    wallet: &'a str,
    state: &PoolState,
    limits: OrderLimits,
    now: DateTime<Utc>,
) -> OrderTerms<'a> {
    OrderTerms {
        venue,
        wallet,
        height: state.height,
        slippage_bps: limits.slippage_bps,
        deadline_seconds: limits.deadline_seconds,
        now: DateTime::from_timestamp_millis(now.timestamp_millis()).unwrap_or(now),
    }
}

/// Any order of the position still open at `now` (one transaction at a time per position).
pub(crate) fn waiting_order(position: &Position, now: DateTime<Utc>) -> Option<&ChainOrder> {
    position.order.as_deref().filter(|o| now < o.expires_at)
}

/// An order still open at `now`: not settled, its deadline not passed.
pub(crate) fn open_order(
    position: &Position,
    kind: OrderKind,
    now: DateTime<Utc>,
) -> Option<&ChainOrder> {
    position
        .order
        .as_deref()
        .filter(|o| o.kind == kind && now < o.expires_at)
}

/// The close of a position opened on chain or read from a wallet. A pending open is cancelled;
/// an active position gets the withdraw to sign (the same one while it is open). `None` when
/// the position changed meanwhile (the caller reads it again).
pub async fn close_on_chain(
    app: &App,
    (position, catalog): (Position, &Catalog),
    limits: OrderLimits,
    answering: Answering<'_>,
) -> Outcome<Option<PositionEntry>> {
    let now = app.clock.now();
    let pool = position_pool(catalog, &position)?;
    if position.status == Status::Pending {
        let closing = unfunded_close(pool, CANCELLED.to_string(), now);
        let closed = Position {
            status: Status::Closed,
            closing: Some(closing.clone()),
            ..position.clone()
        };
        let shown = entry(&closed, catalog, now)?;
        let key = answering.map(|f| f(&shown));
        let (owner, id) = (&position.owner, &position.id);
        return match app
            .store
            .close_answering(owner, id, Status::Pending, &closing, key.as_ref())
            .await
        {
            Err(StoreError::Conflict) => Ok(None),
            result => result.map(|()| Some(shown)).map_err(Into::into),
        };
    }
    if let Some(other) = waiting_order(&position, now).filter(|o| o.kind != OrderKind::Close) {
        return Err(UseCaseError::Conflict(format!(
            "a {} of this position waits for the chain until {}: send it (and report its \
             hash) or let it expire before closing",
            other.kind,
            other.expires_at.to_rfc3339()
        )));
    }
    if open_order(&position, OrderKind::Close, now).is_some() {
        let shown = entry(&position, catalog, now)?;
        keep_shown(app, answering, &shown).await;
        return Ok(Some(shown));
    }
    let Some(holding) = position.holding.as_deref() else {
        return Err(UseCaseError::Conflict(
            "the position has no token on chain to withdraw".into(),
        ));
    };
    acting_from(app, &position).await?;
    if position.chain == Chain::Solana {
        return Err(UseCaseError::Conflict(
            "closing Orca positions from the API is not supported yet: withdraw it from your \
             wallet, and the next refresh reads it closed"
                .into(),
        ));
    }
    if position.liquidity == 0 {
        return Err(UseCaseError::Conflict(
            "the position holds no liquidity to withdraw".into(),
        ));
    }
    let state = fresh_state(catalog, pool, now)?;
    let venue = held_venue_of(catalog, pool, holding)?;
    let chain = order_chain(app, pool.chain)?;
    let terms = held_terms(&venue, &holding.wallet, state, limits, now);
    let ticks = (position.tick_lower, position.tick_upper);
    let (withdraw, known) = if position.protocol == Protocol::UniswapV4 {
        // All its liquidity and every fee owed, the NFT burnt (`BURN_POSITION`).
        refuse_hooked(pool)?;
        let decrease = V4Decrease {
            kind: "withdraw",
            token_id: &holding.token,
            ticks,
            liquidity: position.liquidity,
            fees: owed_fees(&position, holding, catalog),
            burn: true,
        };
        let (built, paid) =
            v4_decrease_transaction(pool, &terms, &decrease).map_err(UseCaseError::internal)?;
        let known = Known {
            paid: Some(paid),
            ..Known::default()
        };
        (built, known)
    } else {
        let built = withdraw_transaction(pool, &terms, &holding.token, ticks, position.liquidity)
            .map_err(UseCaseError::internal)?;
        (built, Known::default())
    };
    let transactions = simulated(chain, pool, vec![withdraw], known).await?;
    let ordered = Position {
        order: Some(Box::new(terms.order(OrderKind::Close, transactions))),
        ..position.clone()
    };
    match app
        .store
        .set_order(&ordered, position.order.as_deref())
        .await
    {
        Err(StoreError::Conflict) => return Ok(None),
        result => result?,
    }
    let shown = entry(&ordered, catalog, now)?;
    keep_shown(app, answering, &shown).await;
    tracing::info!(position = %position.id, "withdraw built for the wallet");
    Ok(Some(shown))
}

/// Records `hash` on the order of the position `id` too (the other side of a range move), if
/// it waits for one; a failure is logged: the sync's wallet read settles it without a hash.
async fn echo_hash(app: &App, owner: &str, id: &str, hash: &str) {
    let recorded = async {
        let Some(other) = app.store.get(owner, id).await? else {
            return Ok(());
        };
        let Some(order) = other.order.as_deref() else {
            return Ok(());
        };
        if order.hash.as_deref() == Some(hash) {
            return Ok(());
        }
        let reported = Position {
            order: Some(Box::new(ChainOrder {
                hash: Some(hash.to_string()),
                ..order.clone()
            })),
            ..other.clone()
        };
        app.store.set_order(&reported, Some(order)).await
    };
    if let Err(e) = recorded.await {
        tracing::warn!(position = %id, cause = %e, "the hash was not recorded on the moved position's other side");
    }
}

/// Records `hash` (checked: 0x and 64 hex digits) on the caller's position's order waiting for
/// the chain: the mint or withdraw the wallet sent (a later hash replaces it: wallets replace
/// transactions to speed them up).
pub async fn report_transaction(
    app: &App,
    owner: &str,
    id: &str,
    hash: &str,
    answering: Answering<'_>,
) -> Outcome<PositionEntry> {
    for _ in 0..3 {
        let (position, catalog) = app.own_position(owner, id).await?;
        let waiting = position
            .order
            .as_deref()
            .filter(|_| position.status != Status::Closed)
            .filter(|o| o.kind == OrderKind::Open || position.status == Status::Active);
        let Some(order) = waiting else {
            return Err(UseCaseError::Conflict(
                "the position has no transaction waiting for the chain".into(),
            ));
        };
        let reported = Position {
            order: Some(Box::new(ChainOrder {
                hash: Some(hash.to_string()),
                ..order.clone()
            })),
            ..position.clone()
        };
        if order.hash.as_deref() != Some(hash) {
            match app.store.set_order(&reported, Some(order)).await {
                Err(StoreError::Conflict) => continue,
                result => result?,
            }
            // A range move's one transaction is also the new position's mint; a move with a
            // swap is two (the withdrawal, then the zap), each side reported its own.
            let zapped = order.transactions.iter().any(|t| t.kind == "zap");
            if let Some(other) = order.moved.as_ref().filter(|_| !zapped) {
                echo_hash(app, &position.owner, other, hash).await;
            }
        }
        let shown = entry(&reported, &catalog, app.clock.now())?;
        keep_shown(app, answering, &shown).await;
        tracing::info!(position = %position.id, %hash, "transaction reported");
        return Ok(shown);
    }
    Err(UseCaseError::Contended(
        "the position changed while the hash was being recorded: retry".into(),
    ))
}

/// Every fee the position is owed now (protocol order): at its pool's synced state where that
/// is newer than its read (decision 57), else as its read found them.
pub(crate) fn owed_fees(
    position: &Position,
    holding: &WalletHolding,
    catalog: &Catalog,
) -> [U256; 2] {
    let at = valued_at_pool(position, holding, catalog);
    let fees = at.as_ref().map_or(&holding.fees, |h| &h.fees);
    fees.clone().map(|f| f.parse().unwrap_or_default())
}

/// 409 for a Uniswap v4 pool whose hook may take or add amounts when liquidity changes (its
/// return-delta permissions): what a transaction would move is then the hook's to say, not
/// the math's, and nothing is answered that cannot say it.
pub(crate) fn refuse_hooked(pool: &Pool) -> Outcome<()> {
    if pool.hooks.as_deref().is_some_and(hook_returns_deltas) {
        return Err(UseCaseError::Conflict(
            "the pool's hook may take or add amounts when liquidity changes (its return-delta \
             permissions): what a transaction would move cannot be said before it runs; act on \
             it from your wallet"
                .into(),
        ));
    }
    Ok(())
}

/// 400 for `"permit": "signature"` where the position manager takes ERC-20 approvals
/// (Uniswap v3 and its forks): no Permit2 there.
pub(crate) fn transactions_only(limits: &OrderLimits) -> Outcome<()> {
    if limits.permit_signature {
        return Err(UseCaseError::bad_request(
            "permit \"signature\" is for Uniswap v4 positions (paid through Permit2): this \
             pool's position manager takes ERC-20 approvals, answered as transactions",
        ));
    }
    Ok(())
}

/// The order of `transactions` (simulated), with their Permit2 approvals taken out into one
/// batch for the wallet to sign where `permit` (the tokens and their allowances) asks it.
pub(crate) fn with_permit(
    terms: &OrderTerms<'_>,
    kind: OrderKind,
    transactions: Vec<TransactionRequest>,
    permit: Option<([&str; 2], [Permit2Allowance; 2])>,
) -> ChainOrder {
    let Some((tokens, allowances)) = permit else {
        return terms.order(kind, transactions);
    };
    let spender = &terms.venue.manager;
    let (kept, batch) = to_signature(
        transactions,
        (tokens, &allowances),
        spender,
        terms.deadline(),
    );
    ChainOrder {
        permit: batch,
        ..terms.order(kind, kept)
    }
}

/// The Uniswap v4 pool's key, or 409 where the catalog's fee, tick spacing and hooks do not
/// hash to its id.
pub(crate) fn v4_key(pool: &Pool) -> Outcome<PoolKey> {
    pool_key(pool).ok_or_else(|| {
        UseCaseError::Conflict(format!(
            "the catalog's key of pool {} (its fee, tick spacing and hooks) does not hash to \
             its id: nothing is built for it; act on it from your wallet",
            pool.id
        ))
    })
}

/// The wallet's allowances `read`, or 503 saying which could not be read.
pub(crate) fn allowances_read<T>(read: Result<T, String>, chain: Chain, what: &str) -> Outcome<T> {
    read.map_err(|e| {
        UseCaseError::MarketStale(format!(
            "the wallet's {what} cannot be read from {chain} ({e}): retry"
        ))
    })
}
