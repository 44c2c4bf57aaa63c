//===- api_loss.cpp - Every loss and its gradient --------------*- C++ -*-===//
//
// cross_entropy and mse_loss run the backend's primitives of their own;
// l1_loss, smooth_l1_loss, kl_div and nll_loss (PyTorch's fp32 autocast
// list) and the binary cross-entropy losses are composed of the backend's
// primitives (unary, binary, reduce, copy) and the scalar terms of
// loss_ops.h, so the CPU and CUDA backends run them without code of their
// own; intermediates are f32 (f64 for f64 tensors: Kit::wide), each result
// rounded once to its dtype.
// nll_loss copies the class indices to the device on every call (on CUDA a
// copy from pageable host memory first waits for the stream).
//
//===----------------------------------------------------------------------===//
#include "composed.h"

#include <math.h>

#include <vector>

using namespace ampc;

namespace {

ampc_status scalarShape(const char *fn, const TensorArg &t, const Shape &s) {
  if (s.numel() != 1)
    return setError(AMPC_ERROR_SHAPE_MISMATCH,
                    "%s: '%s' must be a scalar, got %s", fn, t.name,
                    s.str().c_str());
  return AMPC_OK;
}

ampc_status crossEntropyShapes(const char *fn, const Shape &ls,
                               const Shape &labs) {
  if (ls.rank != 2 || labs.rank != 1 || labs.d[0] != ls.d[0])
    return setError(AMPC_ERROR_SHAPE_MISMATCH,
                    "%s: logits must be [N, C] and labels [N], got %s and %s",
                    fn, ls.str().c_str(), labs.str().c_str());
  return AMPC_OK;
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

/// The shape a loss of terms of shape `s` gives with `reduction`.
Shape lossShape(const Shape &s, ampc_reduction reduction) {
  return reduction == AMPC_REDUCTION_NONE ? s : Shape();
}

ampc_status checkReduction(const char *fn, ampc_reduction r, const Shape &s) {
  if (r < AMPC_REDUCTION_NONE || r > AMPC_REDUCTION_BATCHMEAN)
    return setError(AMPC_ERROR_INVALID_ARGUMENT, "%s: unknown reduction %d",
                    fn, static_cast<int>(r));
  if (r == AMPC_REDUCTION_BATCHMEAN && s.rank == 0)
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "%s: batchmean needs a batch dim", fn);
  return AMPC_OK;
}

/// The gradient of each term from the loss' gradient: 1 (none, sum), 1/n
/// (mean) or 1/size(0) (batchmean).
float termScale(ampc_reduction r, const Shape &s) {
  if (r == AMPC_REDUCTION_MEAN)
    return static_cast<float>(1.0 / static_cast<double>(s.numel()));
  if (r == AMPC_REDUCTION_BATCHMEAN)
    return static_cast<float>(1.0 / static_cast<double>(s.d[0]));
  return 1.0f;
}

/// The count termScale divides by (mean: n, batchmean: size(0)).
double termCount(ampc_reduction r, const Shape &s) {
  return r == AMPC_REDUCTION_BATCHMEAN ? static_cast<double>(s.d[0])
                                       : static_cast<double>(s.numel());
}

/// loss = reduction(terms) with terms f32 (f64 when wide) of shape s.
ampc_status reduceTerms(Kit &k, Buf loss, Buf terms, const Shape &s,
                        ampc_reduction r, float sign = 1.0f) {
  int64_t n = s.numel();
  if (r == AMPC_REDUCTION_NONE)
    return k.copy(loss, terms, n, sign);
  Buf tot;
  AMPC_TRY(k.f32(1, tot));
  if (n == 0)
    AMPC_TRY(k.be.fill(tot, 1, 0.0));
  else
    AMPC_TRY(k.reduceAll(ReduceOp::Sum, tot, terms, n));
  float scale = r == AMPC_REDUCTION_SUM ? 1.0f : termScale(r, s);
  if (n == 0 && r == AMPC_REDUCTION_MEAN)
    return k.be.fill(loss, 1, NAN);
  if (k.scratch == AMPC_F64 && r != AMPC_REDUCTION_SUM) {
    // f64: the sum divided by the count (PyTorch's mean, sum() / size(0)),
    // not times an f32 reciprocal.
    Buf cnt;
    AMPC_TRY(k.scalar(termCount(r, s), cnt));
    AMPC_TRY(k.bin(BinaryOp::Div, tot, Shape{}, tot, Shape{}, cnt, Shape{}));
    scale = 1.0f;
  }
  return k.copy(loss, tot, 1, sign * scale);
}

/// g (shape s) = dloss broadcast from ds, times the gradient of each term
/// (termScale; a division by the count for f64 scratch).
ampc_status termGrad(Kit &k, Buf g, const Shape &s, Buf dloss,
                     const Shape &ds, ampc_reduction r) {
  if (k.scratch != AMPC_F64 || r == AMPC_REDUCTION_NONE ||
      r == AMPC_REDUCTION_SUM)
    return broadcastTo(k.be, g, s, dloss, ds, termScale(r, s));
  AMPC_TRY(broadcastTo(k.be, g, s, dloss, ds, 1.0f));
  Buf cnt;
  AMPC_TRY(k.scalar(termCount(r, s), cnt));
  return k.bin(BinaryOp::Div, g, s, g, s, cnt, Shape{});
}

/// The kind of per-element term of a pair loss.
struct PairTerm {
  bool binary;  // a binary variant of (a, b); else a unary one of a - b
  BinaryOp bop; // binary
  UnaryOp uop;  // unary of the difference
  float attr;
  double exact = 0.0; // attr as given (smooth_l1's beta), for f64
};

/// smooth_l1's term of the differences d (n, f64 scratch) in place, with
/// beta exact (the unary's attribute is an f32): |d| < beta ? 0.5 d^2 / beta
/// : |d| - 0.5 beta, as PyTorch's double kernel.
ampc_status smoothL1Wide(Kit &k, Buf d, int64_t n, double beta) {
  Shape s;
  s.rank = 1;
  s.d[0] = n;
  Buf m, q, mask, bb, half, hb;
  AMPC_TRY(k.f32(n, m));
  AMPC_TRY(k.f32(n, q));
  AMPC_TRY(k.f32(n, mask));
  AMPC_TRY(k.scalar(beta, bb));
  AMPC_TRY(k.scalar(0.5, half));
  AMPC_TRY(k.scalar(0.5 * beta, hb));
  AMPC_TRY(k.un(UnaryOp::Abs, m, d, n));
  AMPC_TRY(k.bin(BinaryOp::Less, mask, s, m, s, bb, Shape{}));
  AMPC_TRY(k.bin(BinaryOp::Mul, q, s, half, Shape{}, d, s));
  AMPC_TRY(k.bin(BinaryOp::Mul, q, s, q, s, d, s));
  AMPC_TRY(k.bin(BinaryOp::Div, q, s, q, s, bb, Shape{}));
  AMPC_TRY(k.bin(BinaryOp::Sub, m, s, m, s, hb, Shape{}));
  AMPC_TRY(k.bin(BinaryOp::WhereTrue, q, s, mask, s, q, s));
  AMPC_TRY(k.bin(BinaryOp::WhereFalse, m, s, mask, s, m, s));
  return k.bin(BinaryOp::Add, d, s, q, s, m, s);
}

/// smooth_l1's gradient in place of d (f64 scratch) from the term gradients
/// g: |d| < beta ? d / beta * g : sgn(d) * g.
ampc_status smoothL1WideBwd(Kit &k, Buf d, Buf g, int64_t n, double beta) {
  Shape s;
  s.rank = 1;
  s.d[0] = n;
  Buf m, q, mask, bb;
  AMPC_TRY(k.f32(n, m));
  AMPC_TRY(k.f32(n, q));
  AMPC_TRY(k.f32(n, mask));
  AMPC_TRY(k.scalar(beta, bb));
  AMPC_TRY(k.un(UnaryOp::Abs, m, d, n));
  AMPC_TRY(k.bin(BinaryOp::Less, mask, s, m, s, bb, Shape{}));
  AMPC_TRY(k.bin(BinaryOp::Div, q, s, d, s, bb, Shape{}));
  AMPC_TRY(k.bin(BinaryOp::Mul, q, s, q, s, g, s));
  AMPC_TRY(k.bin(BinaryOp::SignMul, m, s, d, s, g, s));
  AMPC_TRY(k.bin(BinaryOp::WhereTrue, q, s, mask, s, q, s));
  AMPC_TRY(k.bin(BinaryOp::WhereFalse, m, s, mask, s, m, s));
  return k.bin(BinaryOp::Add, d, s, q, s, m, s);
}

ampc_status pairParse(const char *fn, const TensorArg &a, const TensorArg &b,
                      Shape &as) {
  Shape bs;
  AMPC_TRY(parseTensor(fn, a, kFloatDtype, true, as));
  AMPC_TRY(parseTensor(fn, b, kFloatDtype, true, bs));
  if (as != bs)
    return shapeError(fn, b.name, bs, as);
  return AMPC_OK;
}

ampc_status pairLossFwd(const char *fn, ampc_context ctx, const PairTerm &term,
                        const TensorArg &loss, const TensorArg &a,
                        const TensorArg &b, ampc_reduction r) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape as, ls;
  AMPC_TRY(pairParse(fn, a, b, as));
  AMPC_TRY(checkReduction(fn, r, as));
  AMPC_TRY(parseTensor(fn, loss, kFloatDtype, true, ls));
  if (ls != lossShape(as, r))
    return shapeError(fn, loss.name, ls, lossShape(as, r));
  Kit k(*ctx->backend);
  k.wide({&loss, &a, &b});
  int64_t n = as.numel();
  Buf t;
  AMPC_TRY(k.f32(n, t));
  if (term.binary) {
    AMPC_TRY(k.bin(term.bop, t, as, a.buf(), as, b.buf(), as));
  } else if (term.uop == UnaryOp::SmoothL1 && k.scratch == AMPC_F64) {
    AMPC_TRY(k.bin(BinaryOp::Sub, t, as, a.buf(), as, b.buf(), as));
    AMPC_TRY(smoothL1Wide(k, t, n, term.exact));
  } else {
    AMPC_TRY(k.bin(BinaryOp::Sub, t, as, a.buf(), as, b.buf(), as));
    AMPC_TRY(k.un(term.uop, t, t, n, term.attr));
  }
  return reduceTerms(k, loss.buf(), t, as, r);
}

ampc_status pairLossBwd(const char *fn, ampc_context ctx, const PairTerm &term,
                        const TensorArg &da, const TensorArg &db,
                        const TensorArg &dloss, const TensorArg &a,
                        const TensorArg &b, ampc_reduction r) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape as, das, dbs, ds;
  AMPC_TRY(pairParse(fn, a, b, as));
  AMPC_TRY(checkReduction(fn, r, as));
  AMPC_TRY(parseTensor(fn, da, kFloatDtype, false, das));
  AMPC_TRY(parseTensor(fn, db, kFloatDtype, false, dbs));
  AMPC_TRY(parseTensor(fn, dloss, kFloatDtype, true, ds));
  if (ds != lossShape(as, r))
    return shapeError(fn, dloss.name, ds, lossShape(as, r));
  if (da.data && das != as)
    return shapeError(fn, da.name, das, as);
  if (db.data && dbs != as)
    return shapeError(fn, db.name, dbs, as);
  int64_t n = as.numel();
  if (n == 0)
    return AMPC_OK;
  Kit k(*ctx->backend);
  k.wide({&da, &db, &dloss, &a, &b});
  Buf g;
  AMPC_TRY(k.f32(n, g));
  AMPC_TRY(termGrad(k, g, as, dloss.buf(), ds, r));
  if (term.binary) {
    if (da.data)
      AMPC_TRY(k.binBwd(term.bop, 0, da.buf(), g, as, a.buf(), as, b.buf(),
                        as));
    if (db.data)
      AMPC_TRY(k.binBwd(term.bop, 1, db.buf(), g, as, a.buf(), as, b.buf(),
                        as));
    return AMPC_OK;
  }
  // d a = f'(a - b) * g, d b = -d a.
  Buf d;
  AMPC_TRY(k.f32(n, d));
  AMPC_TRY(k.bin(BinaryOp::Sub, d, as, a.buf(), as, b.buf(), as));
  if (term.uop == UnaryOp::SmoothL1 && k.scratch == AMPC_F64) {
    AMPC_TRY(smoothL1WideBwd(k, d, g, n, term.exact));
  } else {
    UnaryAttrs at{};
    at.v[0] = term.attr;
    AMPC_TRY(k.be.unaryBwd(term.uop, at, d, g, d, n));
  }
  if (da.data)
    AMPC_TRY(k.copy(da.buf(), d, n));
  if (db.data)
    AMPC_TRY(k.copy(db.buf(), d, n, -1.0f));
  return AMPC_OK;
}

/// nll_loss' per-element weights W [N, C]: 1 at (i, labels[i]) for the rows
/// whose label is not ignore_index, 0 elsewhere; and the counted rows.
ampc_status nllWeights(const char *fn, Kit &k, const TensorArg &logp,
                       const TensorArg &labels, int64_t ignoreIndex,
                       Shape &ls, Buf &w, Buf &valid, int32_t site = -1) {
  Shape ys;
  AMPC_TRY(parseTensor(fn, logp, kFloatDtype, true, ls));
  AMPC_TRY(parseTensor(fn, labels, kIndexDtype, true, ys));
  if (ls.rank != 2)
    return setError(AMPC_ERROR_SHAPE_MISMATCH,
                    "%s: logp must be [N, C], got %s", fn, ls.str().c_str());
  Shape want;
  want.rank = 1;
  want.d[0] = ls.d[0];
  if (ys != want)
    return shapeError(fn, labels.name, ys, want);
  int64_t rows = ls.d[0], classes = ls.d[1];
  // An out-of-range label that is not ignore_index selects no class (its
  // row counts 0; PyTorch raises an error); with a site, the context's
  // index check word records it (below).
  std::vector<float> iota(static_cast<size_t>(classes));
  for (int64_t c = 0; c < classes; ++c)
    iota[static_cast<size_t>(c)] = static_cast<float>(c);
  Buf io, ii;
  AMPC_TRY(k.upload(iota, io));
  AMPC_TRY(k.scalar(k.scratch == AMPC_F64 ? static_cast<double>(ignoreIndex)
                                           : static_cast<float>(ignoreIndex),
                    ii));
  AMPC_TRY(k.f32(rows * classes, w));
  AMPC_TRY(k.f32(rows, valid));
  Shape col, row;
  col.rank = 2;
  col.d[0] = rows;
  col.d[1] = 1;
  row.rank = 1;
  row.d[0] = classes;
  AMPC_TRY(k.bin(BinaryOp::Equal, w, ls, labels.buf(), col, io, row));
  AMPC_TRY(k.bin(BinaryOp::NotEqual, valid, want, labels.buf(), want, ii,
                 Shape{}));
  if (site >= 0 && rows > 0) {
    // The labels with ignore_index replaced by 0 go through the embedding
    // primitive's range check (ids in [0, C)), which records the site.
    Buf ids, table, picked;
    AMPC_TRY(k.f32(rows, ids));
    ids.dtype = AMPC_I32;
    AMPC_TRY(k.bin(BinaryOp::WhereTrue, ids, want, valid, want, labels.buf(),
                   want));
    AMPC_TRY(k.f32(classes, table));
    AMPC_TRY(k.be.fill(table, classes, 0.0));
    AMPC_TRY(k.f32(rows, picked));
    AMPC_TRY(k.be.embedding(picked, table, ids, rows, classes, 1, site));
  }
  return k.bin(BinaryOp::Mul, w, ls, w, ls, valid, col);
}

ampc_status nllFwd(const char *fn, ampc_context ctx, const TensorArg &loss,
                   const TensorArg &logp, const TensorArg &labels,
                   int64_t ignoreIndex, ampc_reduction r, int32_t site) {
  AMPC_TRY(checkContext(fn, ctx));
  if (r == AMPC_REDUCTION_BATCHMEAN)
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "%s: nll_loss has no batchmean reduction", fn);
  Kit k(*ctx->backend);
  k.wide({&loss, &logp});
  Shape ls, os;
  Buf w, valid;
  AMPC_TRY(
      nllWeights(fn, k, logp, labels, ignoreIndex, ls, w, valid, site));
  AMPC_TRY(checkReduction(fn, r, ls));
  Shape rowsShape;
  rowsShape.rank = 1;
  rowsShape.d[0] = ls.d[0];
  AMPC_TRY(parseTensor(fn, loss, kFloatDtype, true, os));
  if (os != lossShape(rowsShape, r))
    return shapeError(fn, loss.name, os, lossShape(rowsShape, r));
  int64_t n = ls.numel(), rows = ls.d[0];
  // logp where W is 1, -0 elsewhere (a -inf of another class adds nothing).
  AMPC_TRY(k.bin(BinaryOp::WhereTrue, w, ls, w, ls, logp.buf(), ls));
  bool cols[2] = {false, true};
  Buf picked;
  AMPC_TRY(k.f32(rows, picked));
  if (rows > 0) {
    if (n == 0)
      AMPC_TRY(k.be.fill(picked, rows, 0.0));
    else
      AMPC_TRY(k.reduce(ReduceOp::Sum, picked, w, ls, cols));
  }
  if (r != AMPC_REDUCTION_MEAN)
    return reduceTerms(k, loss.buf(), picked, rowsShape, r, -1.0f);
  // -sum(picked) / count(valid); NaN when no row counts.
  Buf tot, cnt;
  AMPC_TRY(k.f32(1, tot));
  AMPC_TRY(k.f32(1, cnt));
  if (rows == 0)
    return k.be.fill(loss.buf(), 1, NAN);
  AMPC_TRY(k.reduceAll(ReduceOp::Sum, tot, picked, rows));
  AMPC_TRY(k.reduceAll(ReduceOp::Sum, cnt, valid, rows));
  AMPC_TRY(k.bin(BinaryOp::Div, tot, Shape{}, tot, Shape{}, cnt, Shape{}));
  return k.copy(loss.buf(), tot, 1, -1.0f);
}

ampc_status nllBwd(const char *fn, ampc_context ctx, const TensorArg &dlogp,
                   const TensorArg &dloss, const TensorArg &logp,
                   const TensorArg &labels, int64_t ignoreIndex,
                   ampc_reduction r) {
  AMPC_TRY(checkContext(fn, ctx));
  if (r == AMPC_REDUCTION_BATCHMEAN)
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "%s: nll_loss has no batchmean reduction", fn);
  Kit k(*ctx->backend);
  k.wide({&dlogp, &dloss, &logp});
  Shape ls, ds, gs;
  Buf w, valid;
  AMPC_TRY(nllWeights(fn, k, logp, labels, ignoreIndex, ls, w, valid));
  AMPC_TRY(checkReduction(fn, r, ls));
  Shape rowsShape;
  rowsShape.rank = 1;
  rowsShape.d[0] = ls.d[0];
  AMPC_TRY(parseTensor(fn, dloss, kFloatDtype, true, ds));
  AMPC_TRY(parseTensor(fn, dlogp, kFloatDtype, true, gs));
  if (ds != lossShape(rowsShape, r))
    return shapeError(fn, dloss.name, ds, lossShape(rowsShape, r));
  if (gs != ls)
    return shapeError(fn, dlogp.name, gs, ls);
  int64_t rows = ls.d[0];
  if (ls.numel() == 0)
    return AMPC_OK;
  // -W * g with g = dy (none: per row; sum) or dy / count (mean).
  Buf g;
  AMPC_TRY(k.f32(rows, g));
  Shape col;
  col.rank = 2;
  col.d[0] = rows;
  col.d[1] = 1;
  if (r == AMPC_REDUCTION_MEAN) {
    Buf cnt;
    AMPC_TRY(k.f32(1, cnt));
    AMPC_TRY(k.reduceAll(ReduceOp::Sum, cnt, valid, rows));
    AMPC_TRY(k.bin(BinaryOp::Div, g, Shape{}, dloss.buf(), Shape{}, cnt,
                   Shape{}));
    AMPC_TRY(k.bin(BinaryOp::Mul, w, ls, w, ls, g, Shape{}));
  } else {
    AMPC_TRY(k.bin(BinaryOp::Mul, w, ls, w, ls, dloss.buf(),
                   r == AMPC_REDUCTION_NONE ? col : Shape{}));
  }
  return k.copy(dlogp.buf(), w, ls.numel(), -1.0f);
}

const PairTerm kL1{false, BinaryOp::Add, UnaryOp::Abs, 0.0f};
PairTerm smoothL1(double beta) {
  return {false, BinaryOp::Add, UnaryOp::SmoothL1, static_cast<float>(beta),
          beta};
}
PairTerm klDiv(int32_t logTarget) {
  return {true, logTarget ? BinaryOp::KlDivLog : BinaryOp::KlDiv,
          UnaryOp::Abs, 0.0f};
}

/// loss = mean(term(a, b)) over a and b of one shape.
ampc_status lossFwd(const char *fn, BinaryOp term, ampc_context ctx,
                    const TensorArg &loss, const TensorArg &a,
                    const TensorArg &b) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape ls, as, bs;
  AMPC_TRY(parseTensor(fn, loss, kFloatDtype, true, ls));
  AMPC_TRY(parseTensor(fn, a, kFloatDtype, true, as));
  AMPC_TRY(parseTensor(fn, b, kFloatDtype, true, bs));
  if (ls.rank != 0)
    return shapeError(fn, loss.name, ls, Shape{});
  if (as != bs)
    return shapeError(fn, b.name, bs, as);
  // The terms in f32 (f64 for f64 operands); the mean of f64 terms divides
  // by the count in f64.
  Kit k(*ctx->backend);
  k.wide({&loss, &a, &b});
  int64_t n = as.numel();
  Buf terms;
  AMPC_TRY(k.f32(n, terms));
  if (n > 0)
    AMPC_TRY(k.be.binary(term, terms, a.buf(), b.buf(), denseWalk(as)));
  bool reduced[kMaxRank];
  for (int i = 0; i < kMaxRank; ++i)
    reduced[i] = true;
  return reduceDims(k.be, ReduceOp::Mean, loss.buf(), terms, as, reduced);
}

/// da, db (either may be null) of mean(term(a, b)) from the scalar dloss.
ampc_status lossBwd(const char *fn, BinaryOp term, ampc_context ctx,
                    const TensorArg &da, const TensorArg &db,
                    const TensorArg &dloss, const TensorArg &a,
                    const TensorArg &b) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape das, dbs, ds, as, bs;
  AMPC_TRY(parseTensor(fn, da, kFloatDtype, false, das));
  AMPC_TRY(parseTensor(fn, db, kFloatDtype, false, dbs));
  AMPC_TRY(parseTensor(fn, dloss, kFloatDtype, true, ds));
  AMPC_TRY(parseTensor(fn, a, kFloatDtype, true, as));
  AMPC_TRY(parseTensor(fn, b, kFloatDtype, true, bs));
  if (ds.rank != 0)
    return shapeError(fn, dloss.name, ds, Shape{});
  if (as != bs)
    return shapeError(fn, b.name, bs, as);
  if (da.data && das != as)
    return shapeError(fn, da.name, das, as);
  if (db.data && dbs != as)
    return shapeError(fn, db.name, dbs, as);
  int64_t n = as.numel();
  if (n == 0)
    return AMPC_OK;
  // dloss / n at every element: the mean's gradient, on the device (an f32
  // reciprocal; for f64 operands f64 scratch divided by the count in f64).
  Kit k(*ctx->backend);
  k.wide({&da, &db, &dloss, &a, &b});
  Buf g;
  AMPC_TRY(k.f32(n, g));
  if (k.scratch == AMPC_F64) {
    AMPC_TRY(termGrad(k, g, as, dloss.buf(), Shape{}, AMPC_REDUCTION_MEAN));
  } else {
    AMPC_TRY(broadcastTo(k.be, g, as, dloss.buf(), Shape{},
                         static_cast<float>(1.0 / static_cast<double>(n))));
  }
  Walk w = denseWalk(as);
  if (da.data)
    AMPC_TRY(k.be.binaryBwd(term, 0, da.buf(), g, a.buf(), b.buf(), w));
  if (db.data)
    AMPC_TRY(k.be.binaryBwd(term, 1, db.buf(), g, a.buf(), b.buf(), w));
  return AMPC_OK;
}
} // namespace

#define T(x) AMPC_TENSOR(x)

extern "C" {

ampc_status
ampc_cross_entropy_fwd(ampc_context ctx, void *loss, ampc_dtype loss_dtype,
                       const int64_t *loss_shape, int32_t loss_rank,
                       const void *logits, ampc_dtype logits_dtype,
                       const int64_t *logits_shape, int32_t logits_rank,
                       const void *labels, ampc_dtype labels_dtype,
                       const int64_t *labels_shape, int32_t labels_rank,
                       int32_t site) {
  const char *fn = "ampc_cross_entropy_fwd";
  return guard(fn, [&] {
    AMPC_TRY(checkContext(fn, ctx));
    Shape ls, lgs, labs;
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(loss), kFloatDtype, true, ls));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(logits), kFloatDtype, true, lgs));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(labels), kIndexDtype, true, labs));
    AMPC_TRY(scalarShape(fn, AMPC_TENSOR(loss), ls));
    AMPC_TRY(crossEntropyShapes(fn, lgs, labs));
    return ctx->backend->crossEntropy(
        AMPC_TENSOR(loss).buf(), AMPC_TENSOR(logits).buf(),
        AMPC_TENSOR(labels).buf(), lgs.d[0], lgs.d[1], site < 0 ? -1 : site);
  });
}

ampc_status ampc_cross_entropy_bwd(
    ampc_context ctx, void *dlogits, ampc_dtype dlogits_dtype,
    const int64_t *dlogits_shape, int32_t dlogits_rank, const void *dloss,
    ampc_dtype dloss_dtype, const int64_t *dloss_shape, int32_t dloss_rank,
    const void *logits, ampc_dtype logits_dtype, const int64_t *logits_shape,
    int32_t logits_rank, const void *labels, ampc_dtype labels_dtype,
    const int64_t *labels_shape, int32_t labels_rank) {
  const char *fn = "ampc_cross_entropy_bwd";
  return guard(fn, [&] {
    AMPC_TRY(checkContext(fn, ctx));
    Shape dls, ds, lgs, labs;
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(dlogits), kFloatDtype, true, dls));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(dloss), kFloatDtype, true, ds));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(logits), kFloatDtype, true, lgs));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(labels), kIndexDtype, true, labs));
    AMPC_TRY(scalarShape(fn, AMPC_TENSOR(dloss), ds));
    AMPC_TRY(crossEntropyShapes(fn, lgs, labs));
    if (dls != lgs)
      return shapeError(fn, "dlogits", dls, lgs);
    if (lgs.numel() == 0)
      return AMPC_OK;
    return ctx->backend->crossEntropyBwd(
        AMPC_TENSOR(dlogits).buf(), AMPC_TENSOR(dloss).buf(),
        AMPC_TENSOR(logits).buf(), AMPC_TENSOR(labels).buf(), lgs.d[0],
        lgs.d[1]);
  });
}

ampc_status ampc_mse_loss_fwd(ampc_context ctx, void *loss,
                              ampc_dtype loss_dtype, const int64_t *loss_shape,
                              int32_t loss_rank, const void *a,
                              ampc_dtype a_dtype, const int64_t *a_shape,
                              int32_t a_rank, const void *b, ampc_dtype b_dtype,
                              const int64_t *b_shape, int32_t b_rank) {
  const char *fn = "ampc_mse_loss_fwd";
  return guard(fn, [&] {
    AMPC_TRY(checkContext(fn, ctx));
    Shape ls, as, bs;
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(loss), kFloatDtype, true, ls));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(a), kFloatDtype, true, as));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(b), kFloatDtype, true, bs));
    AMPC_TRY(scalarShape(fn, AMPC_TENSOR(loss), ls));
    if (as != bs)
      return shapeError(fn, "b", bs, as);
    return ctx->backend->mse(AMPC_TENSOR(loss).buf(), AMPC_TENSOR(a).buf(),
                             AMPC_TENSOR(b).buf(), as.numel());
  });
}

ampc_status ampc_mse_loss_bwd(
    ampc_context ctx, void *da, ampc_dtype da_dtype, const int64_t *da_shape,
    int32_t da_rank, void *db, ampc_dtype db_dtype, const int64_t *db_shape,
    int32_t db_rank, const void *dloss, ampc_dtype dloss_dtype,
    const int64_t *dloss_shape, int32_t dloss_rank, const void *a,
    ampc_dtype a_dtype, const int64_t *a_shape, int32_t a_rank, const void *b,
    ampc_dtype b_dtype, const int64_t *b_shape, int32_t b_rank) {
  const char *fn = "ampc_mse_loss_bwd";
  return guard(fn, [&] {
    AMPC_TRY(checkContext(fn, ctx));
    Shape das, dbs, ds, as, bs;
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(da), kFloatDtype, false, das));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(db), kFloatDtype, false, dbs));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(dloss), kFloatDtype, true, ds));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(a), kFloatDtype, true, as));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(b), kFloatDtype, true, bs));
    AMPC_TRY(scalarShape(fn, AMPC_TENSOR(dloss), ds));
    if (as != bs)
      return shapeError(fn, "b", bs, as);
    if ((da && das != as) || (db && dbs != as))
      return shapeError(fn, da && das != as ? "da" : "db",
                        da && das != as ? das : dbs, as);
    if (as.numel() == 0)
      return AMPC_OK;
    return ctx->backend->mseBwd(Buf{da, da_dtype}, Buf{db, db_dtype},
                                AMPC_TENSOR(dloss).buf(), AMPC_TENSOR(a).buf(),
                                AMPC_TENSOR(b).buf(), as.numel());
  });
}

ampc_status ampc_l1_loss_fwd(ampc_context ctx, AMPC_OUT_PARAM(loss),
                             AMPC_IN_PARAM(a), AMPC_IN_PARAM(b),
                             ampc_reduction reduction) {
  const char *fn = "ampc_l1_loss_fwd";
  return guard(fn, [&] {
    return pairLossFwd(fn, ctx, kL1, T(loss), T(a), T(b), reduction);
  });
}

ampc_status ampc_l1_loss_bwd(ampc_context ctx, AMPC_OUT_PARAM(da),
                             AMPC_OUT_PARAM(db), AMPC_IN_PARAM(dloss), AMPC_IN_PARAM(a),
                             AMPC_IN_PARAM(b), ampc_reduction reduction) {
  const char *fn = "ampc_l1_loss_bwd";
  return guard(fn, [&] {
    return pairLossBwd(fn, ctx, kL1, T(da), T(db), T(dloss), T(a), T(b),
                       reduction);
  });
}

ampc_status ampc_smooth_l1_loss_fwd(ampc_context ctx, AMPC_OUT_PARAM(loss),
                                    AMPC_IN_PARAM(a), AMPC_IN_PARAM(b), double beta,
                                    ampc_reduction reduction) {
  const char *fn = "ampc_smooth_l1_loss_fwd";
  return guard(fn, [&]() -> ampc_status {
    if (!(beta >= 0.0))
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: beta must not be negative", fn);
    return pairLossFwd(fn, ctx, smoothL1(beta), T(loss), T(a), T(b),
                       reduction);
  });
}

ampc_status ampc_smooth_l1_loss_bwd(ampc_context ctx, AMPC_OUT_PARAM(da),
                                    AMPC_OUT_PARAM(db), AMPC_IN_PARAM(dloss),
                                    AMPC_IN_PARAM(a), AMPC_IN_PARAM(b), double beta,
                                    ampc_reduction reduction) {
  const char *fn = "ampc_smooth_l1_loss_bwd";
  return guard(fn, [&]() -> ampc_status {
    if (!(beta >= 0.0))
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: beta must not be negative", fn);
    return pairLossBwd(fn, ctx, smoothL1(beta), T(da), T(db), T(dloss), T(a),
                       T(b), reduction);
  });
}

ampc_status ampc_kl_div_fwd(ampc_context ctx, AMPC_OUT_PARAM(loss),
                            AMPC_IN_PARAM(a), AMPC_IN_PARAM(b),
                            ampc_reduction reduction, int32_t log_target) {
  const char *fn = "ampc_kl_div_fwd";
  return guard(fn, [&] {
    return pairLossFwd(fn, ctx, klDiv(log_target), T(loss), T(a), T(b),
                       reduction);
  });
}

ampc_status ampc_kl_div_bwd(ampc_context ctx, AMPC_OUT_PARAM(da), AMPC_OUT_PARAM(db),
                            AMPC_IN_PARAM(dloss), AMPC_IN_PARAM(a), AMPC_IN_PARAM(b),
                            ampc_reduction reduction, int32_t log_target) {
  const char *fn = "ampc_kl_div_bwd";
  return guard(fn, [&] {
    return pairLossBwd(fn, ctx, klDiv(log_target), T(da), T(db), T(dloss),
                       T(a), T(b), reduction);
  });
}

ampc_status ampc_nll_loss_fwd(ampc_context ctx, AMPC_OUT_PARAM(loss),
                              AMPC_IN_PARAM(logp), AMPC_IN_PARAM(labels),
                              int64_t ignore_index, ampc_reduction reduction,
                              int32_t site) {
  const char *fn = "ampc_nll_loss_fwd";
  return guard(fn, [&] {
    return nllFwd(fn, ctx, T(loss), T(logp), T(labels), ignore_index,
                  reduction, site);
  });
}

ampc_status ampc_nll_loss_bwd(ampc_context ctx, AMPC_OUT_PARAM(dlogp),
                              AMPC_IN_PARAM(dloss), AMPC_IN_PARAM(logp),
                              AMPC_IN_PARAM(labels), int64_t ignore_index,
                              ampc_reduction reduction) {
  const char *fn = "ampc_nll_loss_bwd";
  return guard(fn, [&] {
    return nllBwd(fn, ctx, T(dlogp), T(dloss), T(logp), T(labels),
                  ignore_index, reduction);
  });
}

#define AMPC_BCE_LOSS(NAME, TERM)                                             \
  ampc_status ampc_##NAME##_fwd(                                               \
      ampc_context ctx, void *loss, ampc_dtype loss_dtype,                     \
      const int64_t *loss_shape, int32_t loss_rank, const void *a,             \
      ampc_dtype a_dtype, const int64_t *a_shape, int32_t a_rank,              \
      const void *b, ampc_dtype b_dtype, const int64_t *b_shape,               \
      int32_t b_rank) {                                                        \
    return guard("ampc_" #NAME "_fwd", [&] {                                   \
      return lossFwd("ampc_" #NAME "_fwd", BinaryOp::TERM, ctx,                \
                     AMPC_TENSOR(loss), AMPC_TENSOR(a), AMPC_TENSOR(b));       \
    });                                                                        \
  }                                                                            \
  ampc_status ampc_##NAME##_bwd(                                               \
      ampc_context ctx, void *da, ampc_dtype da_dtype,                         \
      const int64_t *da_shape, int32_t da_rank, void *db, ampc_dtype db_dtype, \
      const int64_t *db_shape, int32_t db_rank, const void *dloss,             \
      ampc_dtype dloss_dtype, const int64_t *dloss_shape, int32_t dloss_rank,  \
      const void *a, ampc_dtype a_dtype, const int64_t *a_shape,               \
      int32_t a_rank, const void *b, ampc_dtype b_dtype,                       \
      const int64_t *b_shape, int32_t b_rank) {                                \
    return guard("ampc_" #NAME "_bwd", [&] {                                   \
      return lossBwd("ampc_" #NAME "_bwd", BinaryOp::TERM, ctx,                \
                     AMPC_TENSOR(da), AMPC_TENSOR(db), AMPC_TENSOR(dloss),     \
                     AMPC_TENSOR(a), AMPC_TENSOR(b));                          \
    });                                                                        \
  }

AMPC_BCE_LOSS(binary_cross_entropy, Bce)
AMPC_BCE_LOSS(binary_cross_entropy_with_logits, BceLogits)
#undef AMPC_BCE_LOSS

} // extern "C"

#undef T
