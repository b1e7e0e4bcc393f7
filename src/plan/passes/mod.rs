//! The passes that put our ops in the plan before tract's code generation, each a rule offered the
//! model's nodes in order by one [`sweep::Sweep`]: a decomposed hard swish as tract's `HardSwish`
//! ([`hard_swish`]), convolutions on our direct kernel ([`direct_conv`]), layer normalizations as
//! one op ([`layer_norm`]), small matrix products on our kernel ([`small_matmul`]); then the float
//! divisions tract decomposed and no fusion took, put back as exact divisions ([`exact_div`]).
//! [`self_product`] is tract's declutter rule with integer squares kept off tract's float-only
//! `Square`; [`scoped`] holds tract's `codegen` and `PropagateUniformTdim` passes with each node
//! proved against the assertions about its own symbols. Their matchers are in [`node_match`].

pub(crate) mod conv_rule;
pub(crate) mod direct_conv;
pub(crate) mod exact_div;
pub(crate) mod hard_swish;
pub(crate) mod layer_norm;
pub(crate) mod node_match;
pub(crate) mod scoped;
pub(crate) mod self_product;
pub(crate) mod small_matmul;
pub(crate) mod sweep;
