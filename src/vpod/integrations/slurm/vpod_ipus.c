/*
 * vpod_ipus: the --ipus=N option of sbatch, srun and salloc, as Graphcore users type it.
 *
 * Built at set-up against the installed Slurm's <slurm/spank.h> (`vpod slurm build-spank`)
 * and named in plugstack.conf. Slurm lets only SPANK plugins add options to its commands.
 * The plugin checks N is a whole number and hands it to slurmctld in the job's control
 * environment (VPOD_IPUS); job_submit.lua turns it into the job's IPU request
 * (gres:ipu:N) and refuses sizes V-IPU cannot make, at submission, as for --gres=ipu:N.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/spank.h>

SPANK_PLUGIN(vpod_ipus, 1);

#define MAX_IPUS 65536

static long requested = -1;

static int ipus_option(int val, const char *optarg, int remote);

/* Registered in slurm_spank_init: a spank_options table reaches srun only, not sbatch/salloc. */
static struct spank_option ipus_spank_option = {
    "ipus", "N",
    "IPUs for the job: one V-IPU partition of N IPUs (1, 2, 4, 8, 16, 64 or a multiple of 64),"
    " as --gres=ipu:N",
    1, 0, ipus_option};

static int ipus_option(int val, const char *optarg, int remote)
{
    char *end = NULL;
    long n;

    (void)val;
    if (optarg == NULL || *optarg == '\0') {
        if (!remote)
            slurm_error("vpod: --ipus needs a number of IPUs, e.g. --ipus=8");
        return -1;
    }
    errno = 0;
    n = strtol(optarg, &end, 10);
    if (errno != 0 || end == optarg || *end != '\0' || n < 0 || n > MAX_IPUS) {
        if (!remote)
            slurm_error("vpod: --ipus=%s is not a number of IPUs: give e.g. --ipus=8", optarg);
        return -1;
    }
    requested = n;
    return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    if (spank_option_register(sp, &ipus_spank_option) != ESPANK_SUCCESS) {
        slurm_error("vpod: cannot register --ipus");
        return -1;
    }
    return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
    char text[16];
    spank_context_t where = spank_context();

    (void)ac;
    (void)av;
    if (requested < 0)
        return 0;
    if (where != S_CTX_LOCAL && where != S_CTX_ALLOCATOR)
        return 0;
    snprintf(text, sizeof(text), "%ld", requested);
    /* Refused inside an existing allocation (srun in a job): the job's IPUs are set. */
    if (spank_job_control_setenv(sp, "VPOD_IPUS", text, 1) != ESPANK_SUCCESS
        && where == S_CTX_ALLOCATOR) {
        slurm_error("vpod: cannot pass --ipus=%s to slurmctld", text);
        return -1;
    }
    return 0;
}
