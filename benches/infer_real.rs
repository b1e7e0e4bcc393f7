//! `infer` on the largest real exports (models/real/): loading the model and analysing it with its
//! input dims symbolic, every value's type and shape, as `sliceops infer` does.
//!
//!     cargo bench --bench infer_real

use criterion::{criterion_group, criterion_main, Criterion};
use std::time::Duration;

/// The exports with the most nodes: a window-attention transformer (1474 nodes), an encoder-decoder
/// speech transformer (832), a Llama (608) and a YOLOv8 detector (508).
const MODELS: &[&str] = &["swin_torch_legacy", "speech2text_torch_legacy", "llama_torch_legacy", "yolov8_ultralytics"];

fn infer_real(c: &mut Criterion) {
    let mut group = c.benchmark_group("infer_real_exports");
    group.sample_size(10).measurement_time(Duration::from_secs(10));
    for name in MODELS {
        let path = format!("{}/models/real/{name}/model.onnx", env!("CARGO_MANIFEST_DIR"));
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        group.bench_function(*name, |b| {
            b.iter(|| {
                let model = sliceops::Model::load_bytes(&bytes).unwrap();
                let facts = model.infer().unwrap();
                assert!(!facts.is_empty());
                facts.len()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, infer_real);
criterion_main!(benches);
