//! The API's resources: enumerations, the stored position, and the response shapes.

pub use crate::domain::history::FeeState;
use crate::domain::history::{HistorySummary, HistoryView, TokenHistoryView};
pub use crate::domain::json::format_time;
use crate::domain::json::{Exact, Percent, Usd};
pub use crate::domain::keys::{KeyAnswer, KeyClaim, StoredResponse, KEY_LEASE, KEY_RETENTION};
use crate::domain::math::U256;
pub use crate::domain::transactions::{
    calls_of, AmountPair, Call, ExpectedAmounts, ExpectedReward, ExpectedSwap, PermitBatch,
    PermitDetails, RewardToken, TransactionRequest,
};
use bigdecimal::BigDecimal;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

named_enum!(
    /// A supported blockchain network.
    Chain {
        Ethereum => "ethereum",
        Solana => "solana",
        Bsc => "bsc",
        Arbitrum => "arbitrum",
        Base => "base",
    }
);

named_enum!(
    /// The lifecycle state of a position.
    Status {
        Active => "active",
        Closed => "closed",
        Pending => "pending",
    }
);

named_enum!(
    /// A supported concentrated-liquidity exchange.
    Protocol {
        UniswapV3 => "uniswap-v3",
        PancakeswapV3 => "pancakeswap-v3",
        SushiswapV3 => "sushiswap-v3",
        UniswapV4 => "uniswap-v4",
        OrcaWhirlpools => "orca-whirlpools",
        AerodromeSlipstream => "aerodrome-slipstream",
    }
);

named_enum!(
    /// Where a position comes from: opened through the API (recorded, moving no token), or
    /// read from a linked wallet on its chain.
    Source {
        Simulated => "simulated",
        Wallet => "wallet",
    }
);

named_enum!(
    /// What an on-chain order of a position does: open it (a mint), close it (a withdraw), or
    /// act on it while it stays open: collect what is owed, add liquidity, take part out.
    OrderKind {
        Open => "open",
        Close => "close",
        Collect => "collect",
        Increase => "increase",
        Decrease => "decrease",
        Rebalance => "rebalance",
        Harvest => "harvest",
        Stake => "stake",
    }
);

impl Protocol {
    /// Aerodrome Slipstream: a pool is named by its tick spacing (a position's fifth word, the
    /// factory's `getPool` key), its swap fee is the pool's own and dynamic, and its emissions
    /// go to positions staked in the pool's gauge.
    pub fn is_slipstream(self) -> bool {
        self == Protocol::AerodromeSlipstream
    }
}

impl Chain {
    /// EVM addresses are hex and compare case-insensitively; Solana's base58 ones do not.
    pub fn addresses_ignore_case(self) -> bool {
        self != Chain::Solana
    }

    /// The native currency gas is paid in (18 decimals on every EVM chain served; SOL 9).
    pub fn native_symbol(self) -> &'static str {
        match self {
            Chain::Bsc => "BNB",
            Chain::Solana => "SOL",
            _ => "ETH",
        }
    }
}

/// Token amounts in the API's orientation (tokenA, tokenB), in base units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenPair {
    pub a: U256,
    pub b: U256,
}

/// A position's fee growth inside its range at one pool state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeeCheckpoint {
    /// The block or slot of the state it was taken at: a reader holding an older state (a
    /// cached catalog) counts no fees yet rather than a wrapped, negative growth.
    pub height: u64,
    /// Per token in protocol order (token0, token1), in the protocol's fixed point.
    pub growth: [U256; 2],
}

/// What a position paid out when it was closed, frozen: reads show these, never moving ones.
#[derive(Debug, Clone, PartialEq)]
pub struct Closing {
    pub closed_at: DateTime<Utc>,
    /// The pool's price (tokenB per tokenA) at the close.
    pub price: BigDecimal,
    /// The liquidity's amounts at the close, rounded down as a burn pays (base units).
    pub withdrawn: TokenPair,
    /// The fees collected at the close (base units).
    pub fees: TokenPair,
    /// USD values at the close, exact: the withdrawn amounts and the fees per token.
    pub value_a: BigDecimal,
    pub value_b: BigDecimal,
    pub fees_usd_a: BigDecimal,
    pub fees_usd_b: BigDecimal,
    /// The deposited amounts at the close's prices, when the deposit is recorded.
    pub hodl_usd: Option<BigDecimal>,
    /// Realized: withdrawn value + fees − cost basis (0 for a cancelled pending offer), kept to
    /// 10^-12 USD so running totals stay exact in DynamoDB numbers.
    pub pnl_usd: BigDecimal,
    /// The cost basis the close realizes, to 10^-12 USD (0 for a cancelled offer): the
    /// denominator of the portfolio's realized share.
    pub cost_basis_usd: BigDecimal,
    /// Why a position closed other than by its owner's close of an active position (a
    /// cancelled offer, an offer the pool's price at activation funded nothing).
    pub reason: Option<String>,
}

/// The running totals of a user's closed positions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Realized {
    pub pnl_usd: BigDecimal,
    pub cost_basis_usd: BigDecimal,
}

/// A position as stored: what was opened, not what it is worth (its amounts, fees and USD
/// values come from `liquidity`, the checkpoint and its pool's state on every read).
#[derive(Debug, Clone, PartialEq)]
pub struct Position {
    pub id: String,
    pub owner: String,
    pub chain: Chain,
    pub protocol: Protocol,
    /// The pool identifier in the catalog's spelling.
    pub pool: String,
    pub status: Status,
    pub tick_lower: i32,
    pub tick_upper: i32,
    /// 0 while pending: the offer is sized when the sync activates it.
    pub liquidity: u128,
    /// USD value of the deposit when the position was opened (while pending: of the offer at
    /// the last known prices).
    pub cost_basis_usd: BigDecimal,
    /// The token amounts deposited (`None` for positions opened before they were recorded);
    /// while pending, the amounts offered, which activation sizes the deposit from.
    pub deposit: Option<TokenPair>,
    /// Fee growth inside the range when the position was opened; `None` where the pool had
    /// no synced state (no fee accounting then: fees are 0).
    pub fee_checkpoint: Option<FeeCheckpoint>,
    /// The figures frozen when the position was closed; `None` while it is open.
    pub closing: Option<Closing>,
    /// Millisecond precision, as the id's timestamp.
    pub created_at: DateTime<Utc>,
    /// When a simulated position was sized (`None`: pending, a wallet's, or stored before).
    pub activated_at: Option<DateTime<Utc>>,
    /// For a position read from a linked wallet: which one, and what its last read found;
    /// `None` for a simulated one.
    pub holding: Option<Box<WalletHolding>>,
    /// The transaction the owner's wallet is asked to sign for this position (its mint while
    /// pending, its withdraw while a close is requested), until the chain settles it.
    pub order: Option<Box<ChainOrder>>,
}

impl Position {
    pub fn source(&self) -> Source {
        if self.holding.is_some() || self.order.is_some() {
            Source::Wallet
        } else {
            Source::Simulated
        }
    }
}

/// A token of a wallet position, as its contract or mint describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HeldToken {
    pub symbol: String,
    pub address: String,
    pub decimals: u8,
}

/// An on-chain open or close of a position, built for its owner's linked wallet at one pool
/// state, followed until the chain confirms it, reverts it or passes its deadline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChainOrder {
    pub kind: OrderKind,
    /// The linked wallet (canonical spelling) that signs and receives.
    pub wallet: String,
    /// The deployment's position manager the transactions call.
    pub manager: String,
    pub requested_at: DateTime<Utc>,
    /// The transactions' deadline (whole seconds): not mined by then, they can no longer be.
    pub expires_at: DateTime<Utc>,
    /// The block of the pool state it was built at: its events are looked for from there on.
    pub height: u64,
    pub slippage_bps: u32,
    /// In the order to send them.
    pub transactions: Vec<TransactionRequest>,
    /// The hash the client reported for the mint or withdraw (the latest one: wallets replace
    /// transactions to speed them up).
    pub hash: Option<String>,
    /// A move of the range (decision 56): on the moved position's order, the id of the
    /// position its mint opens; on that new position's open, the moved one's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved: Option<String>,
    /// A Permit2 batch waiting for the wallet's signature (`"permit": "signature"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permit: Option<PermitBatch>,
}

/// A wallet position's identity on its chain and the figures of its last read, which reads
/// show (never figures of a state the chain was not read at). Integers are decimal strings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WalletHolding {
    /// The wallet's address (canonical spelling).
    pub wallet: String,
    /// The position manager (EVM) or the Whirlpool program (Solana) it belongs to.
    pub manager: String,
    /// EVM: the position NFT's id. Solana: the position mint.
    pub token: String,
    /// The block or slot of the last read: an older read never overwrites a newer one.
    pub height: u64,
    pub read_at: DateTime<Utc>,
    /// Protocol order: token0, token1 (Orca: A, B).
    pub tokens: [HeldToken; 2],
    /// Base units the liquidity holds at the read, rounded down as a withdrawal pays.
    pub amounts: [String; 2],
    /// Base units the protocol's collect would pay at the read.
    pub fees: [String; 2],
    pub sqrt_price: String,
    pub tick: i32,
    /// Its value in USD when first seen (exact), if both tokens had a price then: the cost
    /// basis its PnL counts from.
    pub first_value_usd: Option<String>,
    /// Why it is closed: `withdrawn` (no liquidity left), `transferred` (the wallet no longer
    /// holds it).
    pub close_reason: Option<String>,
    /// Why the wallet's last read did not take it (its token, pool or state could not be read,
    /// or the read failed whole): its figures are those of its last good read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_error: Option<String>,
    /// EVM: its events summed for its holder (`domain::history`), once read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<HistorySummary>,
    /// The position whose range move opened this one, and the one this one's move opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved_from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved_to: Option<String>,
    /// EVM: its own fee state at the read, its figures at later pool states computed from it
    /// when read (decision 57); whether its bounds are among its pool's tracked ticks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fee_state: Option<FeeState>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tracked: bool,
    /// Whether its range is watched on its pool for alerts (decision 61).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub watched: bool,
    /// EVM: staked in its deployment's farm, as the last read found it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub staked: Option<Staked>,
}

/// What the last read found of a staked position's farm (decision 60). Integers are decimal strings of the
/// reward token's base units.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Staked {
    /// The farm holding the NFT (EIP-55).
    pub contract: String,
    pub reward_token: HeldToken,
    /// What the farm's `pendingCake` answered at the read, at block `pending_height`.
    pub rewards_pending: String,
    #[serde(default)]
    pub pending_height: u64,
    /// The read's block it was first seen staked at.
    pub since_height: u64,
    /// Unstaked since: kept for the rewards its history counts (their token).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unstaked: bool,
}

/// A staked position's farm and rewards as the API shows them.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StakedView {
    pub contract: String,
    /// The block it was staked at (its history's stake; before that is read, the read's).
    pub since_block: u64,
    pub reward_token: HeldToken,
    /// Whole tokens, exact: `pendingCake` at `rewardsPendingBlock` (the wallet's last read).
    pub rewards_pending: String,
    pub rewards_pending_block: u64,
    pub rewards_pending_usd: Option<Usd>,
    /// Whole tokens its farm's harvests paid since it came to the wallet (its history's).
    pub rewards_harvested: String,
    pub rewards_harvested_usd: Option<Usd>,
}

impl WalletHolding {
    /// Identifies the position on its chain, whoever holds it: manager or program and token.
    pub fn key(&self, chain: Chain) -> String {
        format!("{chain}#{}#{}", self.manager, self.token)
    }
}

/// Filters of the list endpoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Filter {
    pub status: Option<Status>,
    pub chain: Option<Chain>,
    pub source: Option<Source>,
}

impl Filter {
    pub fn matches(&self, position: &Position) -> bool {
        self.status.is_none_or(|s| s == position.status)
            && self.chain.is_none_or(|c| c == position.chain)
            && self.source.is_none_or(|s| s == position.source())
    }
}

/// One page of a list: `offset` items skipped, at most `limit` returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest {
    pub offset: u64,
    pub limit: u32,
}

/// A page of positions and the count of every position matching the filter.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    pub items: Vec<Position>,
    pub total: u64,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenAmountView {
    pub symbol: String,
    pub address: String,
    /// Whole tokens, exact, as a decimal string.
    pub amount: String,
    pub value_usd: Usd,
    /// Fees earned in this token and not yet collected: whole tokens, exact.
    pub fees_earned: String,
    pub fees_earned_usd: Usd,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PositionView {
    pub id: String,
    /// `simulated`, or `wallet` for one opened on chain through the API.
    pub source: Source,
    pub chain: Chain,
    pub protocol: Protocol,
    pub pool: String,
    pub token_a: TokenAmountView,
    pub token_b: TokenAmountView,
    pub status: Status,
    pub tick_lower: i32,
    pub tick_upper: i32,
    /// The position's liquidity, an integer string; `null` while pending.
    pub liquidity: Option<String>,
    /// `tickLower <= tick < tickUpper` at the pool's state; `null` once closed.
    pub in_range: Option<bool>,
    /// The pool's state is older than the market allows (figures are at the last state);
    /// `null` once closed.
    pub stale: Option<bool>,
    pub price_lower: f64,
    pub price_upper: f64,
    pub current_price: Exact,
    pub fees_earned_usd: Usd,
    /// The deposit's value when opened.
    pub cost_basis_usd: Usd,
    /// Principal (the tokens the liquidity holds) plus fees earned.
    pub value_usd: Usd,
    /// The deposited amounts at today's prices: what holding instead would be worth.
    pub hodl_value_usd: Option<Usd>,
    /// Principal value minus HODL value.
    pub impermanent_loss_usd: Option<Usd>,
    pub pnl_usd: Usd,
    pub pnl_percent: Percent,
    /// Fees over cost basis, annualized; `null` in the first hour.
    pub fee_apr_percent: Option<Percent>,
    pub created_at: String,
    /// When the position was closed; `null` while open.
    pub closed_at: Option<String>,
    /// Why it closed when its owner did not close it active: `null` otherwise.
    pub close_reason: Option<String>,
    /// Opened on chain through the API: the wallet, the transactions, what the chain did.
    #[serde(flatten)]
    pub order: Option<OrderView>,
}

/// An on-chain open as a position shows it while it waits for the chain, and after.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OrderView {
    pub wallet: String,
    /// The position NFT's id once minted: `null` until the mint is confirmed.
    pub token_id: Option<String>,
    /// The mint's deadline.
    pub expires_at: String,
    /// The hash the client reported, if any.
    pub transaction_hash: Option<String>,
    /// What to sign and send, in order: shown until the position settles.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transactions: Option<Vec<TransactionRequest>>,
    /// The same as one batch, for a contract wallet to send at once (EIP-5792).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calls: Option<Vec<Call>>,
    /// Permit2's `PermitBatch` typed data to sign before the last transaction is answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permit: Option<serde_json::Value>,
    /// The position whose range move this open is (its mint in that position's `multicall`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moved_from: Option<String>,
}

/// A close requested through the API for the owner's wallet to sign, not yet confirmed.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClosingView {
    pub requested_at: String,
    pub expires_at: String,
    pub transaction_hash: Option<String>,
}

/// An action on an open wallet position (a collect, an increase, a decrease) requested through
/// the API for the owner's wallet to sign, not yet confirmed.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionView {
    pub kind: OrderKind,
    pub requested_at: String,
    pub expires_at: String,
    pub transaction_hash: Option<String>,
}

/// A position that cannot be valued at its pool's current state (its amounts there exceed the
/// protocol's amount type): its stored state and why, so that its neighbours are still answered.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnvaluedView {
    pub id: String,
    pub source: Source,
    pub chain: Chain,
    pub protocol: Protocol,
    pub pool: String,
    pub status: Status,
    pub tick_lower: i32,
    pub tick_upper: i32,
    /// The position's liquidity, an integer string; `null` while pending.
    pub liquidity: Option<String>,
    pub created_at: String,
    pub valuation_error: String,
}

/// A token of a wallet position as the API shows it: USD figures `null` where the token has
/// no route to a USD price.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HeldAmountView {
    pub symbol: String,
    pub address: String,
    /// Whole tokens, exact: what the liquidity holds at the last read, rounded down.
    pub amount: String,
    pub value_usd: Option<Usd>,
    /// Whole tokens, exact: the fees earned, collected and not (EVM: from its history, `null`
    /// until it is complete; Orca: what its collect would pay, fees only).
    pub fees_earned: Option<String>,
    pub fees_earned_usd: Option<Usd>,
    /// EVM: its history per token.
    #[serde(flatten)]
    pub history: Option<TokenHistoryView>,
}

/// A position read from a linked wallet, at its last read: amounts and fees are the chain's
/// there, to the unit; every USD figure that needs a token without a USD price is `null`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WalletPositionView {
    pub id: String,
    pub source: Source,
    pub wallet: String,
    /// EVM: the position NFT's id, a decimal string.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_id: Option<String>,
    /// Solana: the position's mint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position_mint: Option<String>,
    pub chain: Chain,
    pub protocol: Protocol,
    pub pool: String,
    /// The pool's base asset where the catalog has the pool (as for a simulated position),
    /// else the protocol's token0 (Orca: A); tokenB the other.
    pub token_a: HeldAmountView,
    pub token_b: HeldAmountView,
    pub status: Status,
    pub tick_lower: i32,
    pub tick_upper: i32,
    pub liquidity: String,
    /// `tickLower <= tick < tickUpper` at the last read; `null` once closed.
    pub in_range: Option<bool>,
    /// tokenB per tokenA at the bounds and at the last read, in whole tokens.
    pub price_lower: f64,
    pub price_upper: f64,
    pub current_price: f64,
    pub fees_earned_usd: Option<Usd>,
    /// Its value when first seen: the PnL counts from then.
    pub cost_basis_usd: Option<Usd>,
    pub value_usd: Option<Usd>,
    pub pnl_usd: Option<Usd>,
    #[serde(flatten)]
    pub history: HistoryView,
    /// The block (EVM) or slot (Solana) of the last read, and when it was made.
    pub read_height: u64,
    pub refreshed_at: String,
    pub created_at: String,
    /// `withdrawn` or `transferred` once closed; `null` while active.
    pub close_reason: Option<String>,
    /// Why the wallet's last read did not take this position; `null` when it did.
    pub read_error: Option<String>,
    /// Whether its figures are older than the wallet's last read (`readError` says why), or
    /// its pool's state older than the market's freshness allows (`refreshedAt` says how old).
    pub stale: bool,
    /// When a close requested through the API was mined (the block's time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closed_at: Option<String>,
    /// A close requested through the API, waiting for the chain, and its transactions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closing: Option<ClosingView>,
    /// An action requested through the API, waiting for the chain (one at a time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<ActionView>,
    /// The position whose range move opened this one; the one this one's move opens (set when
    /// the move is asked; it closes `moved` once confirmed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moved_from: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moved_to: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transactions: Option<Vec<TransactionRequest>>,
    /// The same as one batch, for a contract wallet to send at once (EIP-5792).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calls: Option<Vec<Call>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permit: Option<serde_json::Value>,
    /// What `pnlUsd` leaves out because it has no USD price (a farm's reward token).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pnl_leaves_out: Option<String>,
    /// Staked in its deployment's farm: the farm, since when, its rewards.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub staked: Option<StakedView>,
}

/// A position as the API shows it: valued, or its stored state with a `valuationError`, or
/// read from a wallet.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum PositionEntry {
    Valued(Box<PositionView>),
    Unvalued(UnvaluedView),
    Wallet(Box<WalletPositionView>),
}

#[derive(Debug, Clone, Serialize)]
pub struct ListView<T> {
    pub data: Vec<T>,
    pub total: u64,
}
