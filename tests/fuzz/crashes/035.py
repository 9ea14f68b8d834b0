# fuzz (seed 32): check abort
import tensorflow as tf
ta = tf.TensorArray(tf.float32, 10**12)
