//! Feature `webhooks`: what delivers alerts (decision 61). The queue deliveries wait on (SQS:
//! `queue`; a task per job where no queue runs: `local`), the secrets sealed by KMS (`kms`),
//! the HTTPS sender that connects only to permitted addresses (`sender`), and the delivery
//! function's batches (`consume`); the SQS and KMS clients built at their first use (`clients`).

pub mod clients;
pub mod consume;
pub mod kms;
pub mod local;
pub mod queue;
pub mod sender;
