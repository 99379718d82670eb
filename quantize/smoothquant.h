/* SmoothQuant (Xiao et al. 2022) for post-LN BERT: per-input-channel
 * factors s that move quantization difficulty from activations to weights,
 * X W^T = (X diag(1/s)) (W diag(s))^T.
 *
 *   s_j = max|X_j|^a / max|W_j|^(1-a)
 *
 * max|X_j| is the calibration maximum of input channel j of the linear;
 * max|W_j| = max over n of |W[n][j]| over ALL linears reading that input
 * (the fused qkv matrix already holds Q, K and V). a = 0 gives s_j =
 * 1/max|W_j|, a = 1 gives s_j = max|X_j|.
 *
 * Where each side goes (DESIGN.md, "Numerics that decide correctness"):
 *   weights     W'[n][j] = W[n][j] * s_j, then per-channel s8.
 *   activations NOT folded into LayerNorm on post-LN graphs (the LN output
 *               also feeds the residual); on pre-LN graphs the LN feeds only
 *               the linear and the fold is exact (sq_smooth_fold_layernorm). The runtime's quantize step uses
 *               m_j = 1 / (s_j * act_scale) (sq_ref_act_multipliers), where
 *               act_scale comes from the smoothed range max_j max|X_j| / s_j.
 *   attn_out    exact fold into V instead (sq_smooth_fold_v_out): after it
 *               the attention context is already smoothed and its multiplier
 *               is plain 1 / act_scale.
 *   ffn_down    input is the GELU output: only the multiplier route works.
 *
 * All functions are pure over caller arrays; nothing is global. */
#ifndef SQ_SMOOTHQUANT_H
#define SQ_SMOOTHQUANT_H

#include "linear.h"
#include "sq_error.h"

/* Factors are clamped to [SQ_SMOOTH_MIN, SQ_SMOOTH_MAX]: a channel that is
 * numerically dead on one side must not blow the other side up by 1e30. */
#define SQ_SMOOTH_MIN 1e-5f
#define SQ_SMOOTH_MAX 1e5f
#define SQ_SMOOTH_DEFAULT_ALPHA 0.5f
#define SQ_SMOOTH_DEFAULT_STEP 0.05f

/* wmax[j] = max(wmax[j], max_n |w[n][j]|) for a row-major [n][k] weight.
 * Accumulates: zero wmax first, then call once per linear sharing the input. */
void sq_smooth_weight_absmax(const float *w, int n, int k, float *wmax);

/* s[j] = xmax[j]^alpha / wmax[j]^(1 - alpha), computed in double, clamped to
 * [SQ_SMOOTH_MIN, SQ_SMOOTH_MAX]. s[j] = 1 when xmax[j] or wmax[j] is zero,
 * negative or not finite (nothing to balance). alpha in [0, 1]. */
void sq_smooth_factors(const float *xmax, const float *wmax, int k, float alpha, float *s);

/* Weight side: w[n][j] *= s[j], in place. */
void sq_smooth_scale_weights(float *w, int n, int k, const float *s);

/* Activation side, for observers and simulation: out[r][j] = x[r][j] / s[j]
 * over a [rows][k] block. out may be x (in place). */
void sq_smooth_divide_rows(const float *x, int rows, int k, const float *s, float *out);

/* The smoothed per-tensor minmax range: max_j xmax[j] / s[j]. (Percentile,
 * entropy or mse ranges need a histogram of smoothed activations: rerun the
 * executor and feed sq_smooth_divide_rows output to an observer.) */
float sq_smooth_act_absmax(const float *xmax, const float *s, int k);

/* The exact V -> attention-output fold, in place on the caller's copies:
 * with H = attn_out->in, V's output row 2H + j of the fused qkv (weight row
 * and bias) is divided by s[j] and column j of attn_out's weight multiplied
 * by s[j]. Context channel j is a convex combination of V channel j over
 * tokens (softmax rows sum to 1), so it scales by exactly 1/s[j], bias
 * included, and the projection is unchanged in exact arithmetic. Use factors
 * from attn_out's own weight (wmax over attn_out only) and the calibration
 * max of its input. Returns -1 with err set on a shape mismatch
 * (qkv must be [3D][D] and attn_out [H][D], D the attention width). */
int sq_smooth_fold_v_out(sq_linear *qkv, sq_linear *attn_out, const float *s, sq_err *err);

/* Pre-LN exact fold: a LayerNorm that feeds only `lin` takes 1/s into its
 * gamma and beta (LN(x) / s), and lin's columns take s (W'[n][j] = W[n][j]
 * s_j), so the product is unchanged and the runtime quantizes the LN output
 * as it is (no multiplier). gamma and beta hold lin->in floats. */
void sq_smooth_fold_layernorm(float *gamma, float *beta, sq_linear *lin, const float *s);

/* Clip range of the smoothed activation for one candidate alpha: called with
 * the sample already divided by s ([rows][k]); returns amax > 0 (0 or less
 * falls back to the minmax default). */
typedef float (*sq_smooth_amax_fn)(void *ctx, const float *xs, int rows, int k);

/* Number of alphas a search with this step tries: 0, step, 2 step, ...,
 * and 1.0 (the last one clamped to 1). step must be in (0, 1]. */
int sq_smooth_alpha_count(float step);

typedef struct sq_smooth_search {
    float step;                /* alpha grid step, e.g. SQ_SMOOTH_DEFAULT_STEP */
    sq_smooth_amax_fn amax_fn; /* NULL: minmax (below) */
    void *amax_ctx;
    /* The type the linear ships as: its error is the runtime's quantized
     * linear of that type (qlinear_eval.h). SQ_QT_F32 (0): the int8
     * reference sq_ref_linear_error (the same bits as int8 at the runtime). */
    sq_qtype qtype;
} sq_smooth_search;

/* The alpha search of one linear against its quantized output error (of
 * opt->qtype, int8 by default).
 *
 * x [rows][k]: a sample of real calibration inputs of the linear; w [n][k],
 * bias [n] (may be NULL): its fp32 weights (for qkv the fused matrix); xmax
 * [k]: the calibration per-channel max|X_j|; wmax [k]: max|W_j| over all
 * linears sharing the input, or NULL to take it from w.
 *
 * For each alpha of the grid: s from sq_smooth_factors, activation range
 * amax = amax_fn(smoothed sample) or, by default, minmax: the larger of
 * sq_smooth_act_absmax(xmax, s) (the range the runtime's static scale will
 * have) and the smoothed sample's own max; act_scale = amax / 127; the error
 * is the relative Frobenius error of the quantized vs the fp32 output, bias
 * included in both: sq_qlinear_error_fp32 for opt->qtype (weights quantized
 * with default options), or sq_ref_linear_error when it is SQ_QT_F32. The same is done once with s = 1 ("no smoothing").
 *
 * Best alpha: the smallest error; errors within a relative 1e-6 of it count
 * as ties, won by the alpha closest to 0.5 (the paper's default, robust on
 * unseen data), then by the smaller alpha.
 *
 * Outputs: *best_alpha; errors[sq_smooth_alpha_count(step)] (may be NULL);
 * *error_none (may be NULL). Returns 0, or -1 with err set on bad arguments
 * or out of memory. */
int sq_smooth_search_alpha(const float *x, int rows, int k, const float *w, int n,
                           const float *bias, const float *xmax, const float *wmax,
                           const sq_smooth_search *opt, float *best_alpha, double *errors,
                           double *error_none, sq_err *err);

#endif
