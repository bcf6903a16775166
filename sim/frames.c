/* The frame model of a replay: which coder a frame gets (REA, through the shared decision code
 * of model/rea_decide.h), how many bytes it puts on the wire, and how long the codec takes
 * (the profile's curves). A chunk is one frame, whatever its size, as in both executors
 * (exec/nccl_pipeline.cu codes a chunk's symbols as one frame; exec/engine.c likewise). */
#include "model/rea_decide.h"
#include "sim_internal.h"

#include <math.h>
#include <string.h>

void ncclzSimDataConstant(ncclzSimData *d, double cr_fixedlen, double cr_huffman) {
  memset(d, 0, sizeof *d);
  d->n_ranks = 1;
  d->cr[NCCLZ_CODER_RAW][0] = 1.0;
  d->cr[NCCLZ_CODER_FIXEDLEN][0] = cr_fixedlen;
  d->cr[NCCLZ_CODER_HUFFMAN][0] = cr_huffman;
  d->data_class = NCCLZ_CLASS_DEFAULT;
  d->dtype_bytes = 4;
}

double ncclzSimDataCr(const ncclzSimData *d, ncclzCoder c, uint32_t k) {
  if (c == NCCLZ_CODER_RAW || d->n_ranks == 0) return 1.0;
  uint32_t i = k == 0 ? 0 : k - 1;
  if (i >= d->n_ranks) i = d->n_ranks - 1;
  double cr = d->cr[c][i];
  return cr > 0.0 ? cr : 1.0;
}

/* One frame: RAW is the raw symbols plus the header; a coder is raw / CR (the header is part of
 * the measured CR), never less than the header. */
static double one_frame(const sim_job *job, ncclzCoder c, uint32_t k, double raw) {
  if (c == NCCLZ_CODER_RAW) return raw + NCCLZ_FRAME_HEADER_BYTES;
  double b = raw / ncclzSimDataCr(job->data, c, k);
  return b < NCCLZ_FRAME_HEADER_BYTES ? NCCLZ_FRAME_HEADER_BYTES : b;
}

double sim_frame_bytes(const sim_job *job, ncclzCoder c, uint32_t k, double raw_bytes) {
  if (job->opt->compress == NCCLZ_SIM_OFF) return raw_bytes;
  return one_frame(job, c, k, raw_bytes);
}

double sim_codec_us(const sim_job *job, ncclzCoder c, int decode, double raw_bytes) {
  if (job->opt->compress == NCCLZ_SIM_OFF || c == NCCLZ_CODER_RAW || !job->prof) return 0.0;
  const ncclzCodecCurves *cv = ncclz_rea_curves(job->prof, c, job->data->data_class);
  return ncclz_rea_curve_us(decode ? &cv->decode : &cv->encode, raw_bytes);
}

/* REA on this chunk's frame: the candidates from the data profile's CR, the rules of the
 * profile's thresholds (the executor's), the link of this hop (the scenario's bandwidth). */
ncclzCoder sim_rea_decide(const sim_job *job, const sim_hop *hop, uint32_t k, double raw, double pipeline_frames,
                          ncclzReaDecision *dec) {
  double pred[NCCLZ_CODER_COUNT];
  for (int c = 0; c < NCCLZ_CODER_COUNT; c++) pred[c] = one_frame(job, (ncclzCoder)c, k, raw);
  ncclzReaLink link = ncclz_rea_link(job->prof, hop->hint);
  if (!job->opt->rea_link_profile) {
    link.alpha_us = hop->alpha_us;
    link.beta_gbps = hop->beta_gbps;
  }
  return ncclzReaDecidePredicted(job->prof, &job->cfg[hop->hint], link, job->data->data_class, raw, pipeline_frames,
                                 pred, dec);
}

ncclzCoder sim_pick_coder(const sim_job *job, const sim_hop *hop, uint32_t k, double raw_bytes) {
  switch (job->opt->compress) {
  case NCCLZ_SIM_AUTO: {
    if (job->call_coder >= 0) return (ncclzCoder)job->call_coder;
    if (job->per_hop && hop->hint == NCCLZ_HINT_NVLINK) return NCCLZ_CODER_RAW; /* NVLink hops stay raw */
    /* a frame of an op's pipeline of nchunks frames, as the call's plan; in the tree every level
     * decodes, adds and re-encodes each chunk before passing it on, so its codec time is exposed
     * (a frame on its own) */
    ncclzReaDecision dec;
    double pipeline = job->spec.algo == NCCLZ_ALGO_TREE ? 1.0 : (double)job->nchunks;
    return sim_rea_decide(job, hop, k, raw_bytes, pipeline, &dec);
  }
  case NCCLZ_SIM_FIXEDLEN: return NCCLZ_CODER_FIXEDLEN;
  case NCCLZ_SIM_HUFFMAN: return NCCLZ_CODER_HUFFMAN;
  default: return NCCLZ_CODER_RAW;
  }
}

/* CR for k = 1 from real data, as REA itself would predict it: quantize, sample frame by frame,
 * predict one full frame's size per coder. Sums of k > 1 ranks reuse it (a data profile from
 * `ncclz profile-data` will carry measured partial sums). */
ncclzStatus ncclzSimDataFromSamples(const void *raw, size_t len, ncclzDtype dtype, const char *quant_spec,
                                    const ncclzProfile *prof, ncclzSimData *out) {
  ncclzQuantSpec spec;
  if (ncclzQuantSpecParse(quant_spec, &spec) != NCCLZ_OK) return NCCLZ_ERR_ARG;
  size_t esize = ncclzDtypeSize(dtype);
  if (len == 0 || len % esize) return ncclzSetError(NCCLZ_ERR_ARG, "%zu bytes is not a whole number of elements", len);
  ncclzSymbols syms;
  ncclzStatus st = ncclzArrayQuantize(&spec, dtype, raw, len / esize, NULL, 0, 0, &syms);
  if (st != NCCLZ_OK) return st;
  ncclzReaConfig cfg;
  ncclzReaConfigFromProfile(prof, NCCLZ_HINT_NET, ncclzDataClassOf(&syms.qp), &cfg);
  size_t frame_syms = prof->thresholds.frame_bytes / esize ? prof->thresholds.frame_bytes / esize : 1;
  ncclzSampleStats stats;
  st = ncclzReaSampleProfileFrames(syms.sym, syms.n, frame_syms, cfg.sample_window_bytes, cfg.sample_pieces, &stats);
  if (st == NCCLZ_OK) {
    size_t nf = frame_syms < syms.n ? frame_syms : syms.n;
    ncclzCoderParams cp;
    ncclzFrameCoderParams(&cp);
    ncclzReaCandidates cand;
    ncclzReaPredictFrames(&stats, nf, esize, ncclzReaSideBytes(&syms.qp, nf), &cp, &cand);
    ncclzSimDataConstant(out, cand.frame_raw_bytes / (double)cand.pred_frame_bytes[NCCLZ_CODER_FIXEDLEN],
                         cand.frame_raw_bytes / (double)cand.pred_frame_bytes[NCCLZ_CODER_HUFFMAN]);
    for (int k = 1; k < NCCLZ_SIM_MAX_CR_RANKS; k++)
      for (int c = 0; c < NCCLZ_CODER_COUNT; c++) out->cr[c][k] = out->cr[c][0];
    out->n_ranks = 1;
    out->data_class = ncclzDataClassOf(&syms.qp);
    out->dtype_bytes = esize;
  }
  ncclzSymbolsFree(&syms);
  return st;
}
