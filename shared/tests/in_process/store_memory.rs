//! The store contract on the in-memory store.

test_support::store_contract!(contract, shared::store::MemoryStore::new(), 200);
