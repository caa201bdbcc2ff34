"""The pre-LN transformer block that models/char_gpt and models/vit_mnist
build their nets from (GPT-2's and ViT's block), on a pycaffe NetSpec."""
from caffe import layers as L


def pre_ln_block(n, x, prefix, width, heads, causal, mlp_width, std, projection_std,
                 linear, layer_norm):
    """Adds one block after x to NetSpec n, its tops named prefix + 'ln1' and
    so on, and returns its output: LayerNorm, one InnerProduct to Q, K and V,
    Slice, the fused Attention, a projection, a residual; LayerNorm, a GELU
    MLP of mlp_width, a projection, a residual. The projections back into
    the residual stream start from projection_std; linear(bottom, width, std)
    and layer_norm(bottom) make the model's own layers of those kinds."""
    b = prefix
    n[b + 'ln1'] = layer_norm(x)
    n[b + 'qkv'] = linear(n[b + 'ln1'], 3 * width, std)
    q, k, v = L.Slice(n[b + 'qkv'], axis=2, slice_point=[width, 2 * width], ntop=3)
    n[b + 'q'], n[b + 'k'], n[b + 'v'] = q, k, v
    n[b + 'att'] = L.Attention(q, k, v, attention_param=dict(causal=causal, num_heads=heads))
    n[b + 'proj'] = linear(n[b + 'att'], width, projection_std)
    n[b + 'x1'] = L.Eltwise(x, n[b + 'proj'])
    n[b + 'ln2'] = layer_norm(n[b + 'x1'])
    n[b + 'fc'] = linear(n[b + 'ln2'], mlp_width, std)
    n[b + 'gelu'] = L.GELU(n[b + 'fc'], in_place=True)
    n[b + 'fc2'] = linear(n[b + 'gelu'], width, projection_std)
    n[b + 'x2'] = L.Eltwise(n[b + 'x1'], n[b + 'fc2'])
    return n[b + 'x2']
