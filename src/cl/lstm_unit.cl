// LSTMUnit: one LSTM step, one work-item per (stream n, cell d). The gate
// inputs X of a stream hold 4 blocks of hidden_dim values in Caffe's order
// i, f, o, g. cont (one value per stream) gates the forget path:
//     c = cont * sigmoid(f') * c_prev + sigmoid(i') * tanh(g')
//     h = sigmoid(o') * tanh(c)
// DATA_TYPE (common.cl's storage types; float by default) is how c_prev, X,
// c, h and their gradients are stored: each value is widened on load, the
// arithmetic is float, each result is rounded once on store. cont stays
// float (the sequence indicators).

inline float lstm_sigmoid(const float x) { return 1.f / (1.f + exp(-x)); }

__kernel void lstm_unit_forward(const int count, const int hidden_dim,
                                __global const DATA_ELEM* c_prev,
                                __global const DATA_ELEM* gates, __global const float* cont,
                                __global DATA_ELEM* c, __global DATA_ELEM* h) {
  const int index = GLOBAL_INDEX;
  if (index >= count) return;
  const int n = index / hidden_dim;
  const int d = index - n * hidden_dim;
  const int x = n * 4 * hidden_dim;  // this stream's gate inputs
  const float i = lstm_sigmoid(DATA_LOAD(gates, x + d));
  const float f =
      cont[n] == 0.f ? 0.f : cont[n] * lstm_sigmoid(DATA_LOAD(gates, x + hidden_dim + d));
  const float o = lstm_sigmoid(DATA_LOAD(gates, x + 2 * hidden_dim + d));
  const float g = tanh(DATA_LOAD(gates, x + 3 * hidden_dim + d));
  const float c_t = f * DATA_LOAD(c_prev, index) + i * g;
  DATA_STORE(c, index, c_t);
  // From the float c_t, so h is the rounding of the float32 layer's h.
  DATA_STORE(h, index, o * tanh(c_t));
}

// Gradients of c_prev and of the gate inputs from those of c and h. The gates
// are recomputed from X; c comes from the forward's top (as stored). The
// forget gate's derivative is cont * s (1 - s) with s = sigmoid(f'), exact
// for any cont (Caffe writes f (1 - f), the same for its binary cont).
__kernel void lstm_unit_backward(const int count, const int hidden_dim,
                                 __global const DATA_ELEM* c_prev,
                                 __global const DATA_ELEM* gates, __global const float* cont,
                                 __global const DATA_ELEM* c, __global const DATA_ELEM* c_diff,
                                 __global const DATA_ELEM* h_diff, const int write_c_prev_diff,
                                 __global DATA_ELEM* c_prev_diff, const int write_gates_diff,
                                 __global DATA_ELEM* gates_diff) {
  const int index = GLOBAL_INDEX;
  if (index >= count) return;
  const int n = index / hidden_dim;
  const int d = index - n * hidden_dim;
  const int x = n * 4 * hidden_dim;  // this stream's gate inputs and their gradients
  const float i = lstm_sigmoid(DATA_LOAD(gates, x + d));
  const float f_sigmoid = lstm_sigmoid(DATA_LOAD(gates, x + hidden_dim + d));
  const float f = cont[n] == 0.f ? 0.f : cont[n] * f_sigmoid;
  const float o = lstm_sigmoid(DATA_LOAD(gates, x + 2 * hidden_dim + d));
  const float g = tanh(DATA_LOAD(gates, x + 3 * hidden_dim + d));
  const float tanh_c = tanh(DATA_LOAD(c, index));
  const float dh = DATA_LOAD(h_diff, index);
  const float c_term_diff = DATA_LOAD(c_diff, index) + dh * o * (1.f - tanh_c * tanh_c);
  if (write_c_prev_diff) DATA_STORE(c_prev_diff, index, c_term_diff * f);
  if (write_gates_diff) {
    DATA_STORE(gates_diff, x + d, c_term_diff * g * i * (1.f - i));
    DATA_STORE(gates_diff, x + hidden_dim + d,
               cont[n] == 0.f ? 0.f
                              : c_term_diff * DATA_LOAD(c_prev, index) * cont[n] * f_sigmoid *
                                    (1.f - f_sigmoid));
    DATA_STORE(gates_diff, x + 2 * hidden_dim + d, dh * tanh_c * o * (1.f - o));
    DATA_STORE(gates_diff, x + 3 * hidden_dim + d, c_term_diff * i * (1.f - g * g));
  }
}
