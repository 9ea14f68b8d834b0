"""Classification metrics for a batch of logits: accuracy and a confusion matrix."""
import functools

import jax
import jax.numpy as jnp


@jax.jit
def accuracy(logits, labels):
    return jnp.mean(jnp.argmax(logits, axis=-1) == labels)


@functools.partial(jax.jit, static_argnames="num_classes")
def confusion_matrix(logits, labels, num_classes):
    preds = jnp.argmax(logits, axis=-1)
    cm = jnp.zeros((num_classes, num_classes), dtype=jnp.int32)
    for i in range(labels.shape[0]):
        cm[labels[i], preds[i]] += 1
    return cm


if __name__ == "__main__":
    kl, ky = jax.random.split(jax.random.key(0))
    logits = jax.random.normal(kl, (8, 3))
    labels = jax.random.randint(ky, (8,), 0, 3)
    print("accuracy:", float(accuracy(logits, labels)))
    print(confusion_matrix(logits, labels, num_classes=3))
