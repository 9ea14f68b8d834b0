//! The language server analyses a file on every edit: an analysis must give back all it
//! allocated, or the server grows without bound.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicIsize, Ordering};

use tracer_core::interp::SourceLoader;
use tracer_core::{analyze_file, AnalysisConfig};

/// Counts the bytes live on the heap (this test binary only).
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

struct NoFiles;

impl SourceLoader for NoFiles {
    fn read(&self, _path: &Path) -> Option<Rc<str>> {
        None
    }
}

const MODEL: &str = r#"
import jax
import jax.numpy as jnp
from dataclasses import dataclass


@dataclass
class Config:
    width: int = 16


def init(cfg):
    return {"w": jnp.ones((cfg.width, cfg.width)), "b": jnp.zeros((cfg.width,))}


@jax.jit
def layer(params, x):
    h = jnp.tanh(x @ params["w"] + params["b"])
    return helper(h)


def helper(h):
    return h * 2.0


class Model:
    def __init__(self, cfg):
        self.params = init(cfg)

    def __call__(self, x):
        return layer(self.params, x)


model = Model(Config())
for n in (2, 3, 3):
    y = model(jnp.ones((n, 16)))
"#;

#[test]
fn an_analysis_frees_what_it_allocated() {
    let run = || {
        let a = analyze_file(&PathBuf::from("model.py"), MODEL, &NoFiles, &AnalysisConfig::default());
        assert!(!a.functions.is_empty(), "the model was not traced");
    };
    run(); // lazily built tables stay for the process
    let before = LIVE.load(Ordering::Relaxed);
    for _ in 0..20 {
        run();
    }
    let grown = LIVE.load(Ordering::Relaxed) - before;
    assert!(grown < 4096, "20 analyses kept {grown} bytes");
}
