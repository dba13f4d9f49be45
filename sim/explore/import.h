/* import.h — scenarios from what teams already run: a Megatron-LM command
 * line (pretrain_gpt.py's flags, with the torchrun launcher's in front if
 * present) or a DeepSpeed ds_config.json, written as a scenario INI.
 *
 * Every flag or key read becomes a scenario key with a comment above it
 * naming where it came from; every one that changes nothing mpsim models
 * (learning rate, data paths, logging, ...) is a warning on `warn`; one
 * that names something mpsim does not model yet (a key the table does not
 * have, such as context parallelism before parallel.cp exists) is a
 * warning "not modelled yet". A malformed value is MP_ERR_INPUT naming the
 * flag or the JSON key and what was expected, and nothing is written.
 *
 * Megatron's defaults where they differ from mpsim's are written out (no
 * --overlap-grad-reduce: training.dp_overlap = false). The model: the
 * preset (models/NAME.json) of the same shape when one exists, else a
 * Hugging Face config.json written to `model_out` (required then). The
 * data-parallel degree is the world size (torchrun's --nnodes ×
 * --nproc_per_node, or `chips`) ÷ (tp × pp); DeepSpeed's is
 * train_batch_size ÷ (micro batch × gradient accumulation steps). */
#ifndef MPSIM_IMPORT_H
#define MPSIM_IMPORT_H

#include <stdio.h>

#include "sim/common.h"

struct import_options {
    int chips;              /* world size when the command line does not say; 0 unknown */
    const char *system;     /* hardware.system to write; NULL: dgx-h100, with a warning */
    const char *model_out;  /* where to write the model's config.json when no preset fits */
    const char *const *sets;/* NULL-terminated "key=value" written last (--set) */
    FILE *warn;             /* warnings, one line each ("mpsim: import: warning: ...") */
};

/* A Megatron command line as words (the shell's, or one string split like
 * the shell would: quotes, backslash-newline). Writes the INI to `out`. */
int import_megatron(char *const *words, int n, const struct import_options *opt, FILE *out,
                    struct mp_error *err);

/* A DeepSpeed JSON configuration file. */
int import_deepspeed(const char *path, const struct import_options *opt, FILE *out,
                     struct mp_error *err);

/* Split `s` into words as sh would for a plain command line (no
 * expansions): blanks separate, '…' and "…" quote, a backslash escapes the
 * next character and a backslash-newline joins lines. MP_ERR_INPUT for an
 * unterminated quote. Free with import_words_free. */
int import_split_words(const char *s, char ***words, int *n, struct mp_error *err);
void import_words_free(char **words, int n);

#endif
