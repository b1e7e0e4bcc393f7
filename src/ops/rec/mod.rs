//! Recurrent ops: `RNN`, `GRU`, `LSTM`.

pub(crate) mod gru;
pub(crate) mod lstm;
pub(crate) mod recurrent;
pub(crate) mod stock_rec;
