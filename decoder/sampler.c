#include "sampler.h"

#include <math.h>
#include <stdlib.h>

#include "seeded_rng.h"

struct sq_prob_id {
    double p;
    int32_t id;
};

int sq_sampler_init(sq_sampler *s, int vocab, float temperature, float top_p, uint64_t seed)
{
    s->vocab = vocab;
    s->temperature = temperature;
    s->top_p = top_p;
    s->rng = seed;
    s->prob = malloc((size_t)vocab * sizeof *s->prob);
    s->order = malloc((size_t)vocab * sizeof *s->order);
    if (!s->prob || !s->order) {
        sq_sampler_free(s);
        return -1;
    }
    return 0;
}

void sq_sampler_free(sq_sampler *s)
{
    free(s->prob);
    free(s->order);
    s->prob = NULL;
    s->order = NULL;
}

int32_t sq_sample_argmax(const float *logits, int vocab)
{
    int32_t best = 0;
    for (int i = 1; i < vocab; i++)
        if (logits[i] > logits[best])
            best = i;
    return best;
}

/* A uniform double in [0, 1) from the top 53 bits. */
static double uniform(uint64_t *state)
{
    return (double)(sq_splitmix64(state) >> 11) * (1.0 / 9007199254740992.0);
}

static int by_prob_desc(const void *a, const void *b)
{
    const struct sq_prob_id *x = a, *y = b;
    if (x->p != y->p)
        return x->p > y->p ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* s->prob = softmax(logits / T) in double. */
static void softmax_t(sq_sampler *s, const float *logits)
{
    const int V = s->vocab;
    const double inv_t = 1.0 / s->temperature;
    double mx = logits[sq_sample_argmax(logits, V)], sum = 0;
    for (int i = 0; i < V; i++) {
        s->prob[i] = exp((logits[i] - mx) * inv_t);
        sum += s->prob[i];
    }
    for (int i = 0; i < V; i++)
        s->prob[i] /= sum;
}

/* The nucleus: s->order sorted by probability (ties by id); returns how
 * many lead it (the shortest prefix whose mass exceeds top_p) and its mass. */
static int nucleus(sq_sampler *s, double *mass_out)
{
    const int V = s->vocab;
    for (int i = 0; i < V; i++)
        s->order[i] = (struct sq_prob_id){s->prob[i], i};
    qsort(s->order, (size_t)V, sizeof *s->order, by_prob_desc);
    double mass = 0;
    int keep = V;
    for (int i = 0; i < V; i++) {
        mass += s->order[i].p;
        if (mass > s->top_p) {
            keep = i + 1;
            break;
        }
    }
    *mass_out = mass;
    return keep;
}

int32_t sq_sample(sq_sampler *s, const float *logits)
{
    if (!(s->temperature > 0.0f))
        return sq_sample_argmax(logits, s->vocab);
    const int V = s->vocab;
    softmax_t(s, logits);
    const double u = uniform(&s->rng);
    if (s->top_p >= 1.0f) {
        double cdf = 0;
        for (int i = 0; i < V; i++) {
            cdf += s->prob[i];
            if (u < cdf)
                return i;
        }
        return V - 1; /* rounding: u beyond the last cumulative sum */
    }
    /* Nucleus: draw within the most probable tokens. */
    double mass;
    const int keep = nucleus(s, &mass);
    const double r = u * mass;
    double cdf = 0;
    for (int i = 0; i < keep; i++) {
        cdf += s->order[i].p;
        if (r < cdf)
            return s->order[i].id;
    }
    return s->order[keep - 1].id;
}

void sq_sampler_dist(sq_sampler *s, const float *logits, double *prob)
{
    const int V = s->vocab;
    softmax_t(s, logits);
    if (s->top_p >= 1.0f) {
        for (int i = 0; i < V; i++)
            prob[i] = s->prob[i];
        return;
    }
    double mass;
    const int keep = nucleus(s, &mass);
    for (int i = 0; i < V; i++)
        prob[i] = 0.0;
    for (int i = 0; i < keep; i++)
        prob[s->order[i].id] = s->order[i].p / mass;
}

double sq_sampler_uniform(sq_sampler *s)
{
    return uniform(&s->rng);
}

int32_t sq_sampler_draw(sq_sampler *s, const double *prob)
{
    const int V = s->vocab;
    double total = 0;
    for (int i = 0; i < V; i++)
        total += prob[i];
    const double r = uniform(&s->rng) * total;
    double cdf = 0;
    int32_t last = 0;
    for (int i = 0; i < V; i++) {
        if (!(prob[i] > 0.0))
            continue;
        cdf += prob[i];
        last = i;
        if (r < cdf)
            return i;
    }
    return last; /* rounding: r beyond the last cumulative sum */
}
