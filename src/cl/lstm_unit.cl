// LSTMUnit: one LSTM step, one work-item per (stream n, cell d). The gate
// inputs X of a stream hold 4 blocks of hidden_dim values in Caffe's order
// i, f, o, g. cont (one value per stream) gates the forget path:
//     c = cont * sigmoid(f') * c_prev + sigmoid(i') * tanh(g')
//     h = sigmoid(o') * tanh(c)

inline float lstm_sigmoid(const float x) { return 1.f / (1.f + exp(-x)); }

__kernel void lstm_unit_forward(const int count, const int hidden_dim,
                                __global const float* c_prev, __global const float* gates,
                                __global const float* cont, __global float* c,
                                __global float* h) {
  const int index = GLOBAL_INDEX;
  if (index >= count) return;
  const int n = index / hidden_dim;
  const int d = index - n * hidden_dim;
  __global const float* x = gates + n * 4 * hidden_dim;
  const float i = lstm_sigmoid(x[d]);
  const float f = cont[n] == 0.f ? 0.f : cont[n] * lstm_sigmoid(x[hidden_dim + d]);
  const float o = lstm_sigmoid(x[2 * hidden_dim + d]);
  const float g = tanh(x[3 * hidden_dim + d]);
  const float c_t = f * c_prev[index] + i * g;
  c[index] = c_t;
  h[index] = o * tanh(c_t);
}

// Gradients of c_prev and of the gate inputs from those of c and h. The gates
// are recomputed from X; c comes from the forward's top. The forget gate's
// derivative is cont * s (1 - s) with s = sigmoid(f'), exact for any cont
// (Caffe writes f (1 - f), the same for its binary cont).
__kernel void lstm_unit_backward(const int count, const int hidden_dim,
                                 __global const float* c_prev, __global const float* gates,
                                 __global const float* cont, __global const float* c,
                                 __global const float* c_diff, __global const float* h_diff,
                                 const int write_c_prev_diff, __global float* c_prev_diff,
                                 const int write_gates_diff, __global float* gates_diff) {
  const int index = GLOBAL_INDEX;
  if (index >= count) return;
  const int n = index / hidden_dim;
  const int d = index - n * hidden_dim;
  __global const float* x = gates + n * 4 * hidden_dim;
  const float i = lstm_sigmoid(x[d]);
  const float f_sigmoid = lstm_sigmoid(x[hidden_dim + d]);
  const float f = cont[n] == 0.f ? 0.f : cont[n] * f_sigmoid;
  const float o = lstm_sigmoid(x[2 * hidden_dim + d]);
  const float g = tanh(x[3 * hidden_dim + d]);
  const float tanh_c = tanh(c[index]);
  const float dh = h_diff[index];
  const float c_term_diff = c_diff[index] + dh * o * (1.f - tanh_c * tanh_c);
  if (write_c_prev_diff) c_prev_diff[index] = c_term_diff * f;
  if (write_gates_diff) {
    __global float* dx = gates_diff + n * 4 * hidden_dim;
    dx[d] = c_term_diff * g * i * (1.f - i);
    dx[hidden_dim + d] =
        cont[n] == 0.f ? 0.f : c_term_diff * c_prev[index] * cont[n] * f_sigmoid * (1.f - f_sigmoid);
    dx[2 * hidden_dim + d] = dh * tanh_c * o * (1.f - o);
    dx[3 * hidden_dim + d] = c_term_diff * i * (1.f - g * g);
  }
}
