"""``train``: flags to estimator parameters, the data read (in memory or streamed), the fit."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time

import click
import numpy as np

from ..solvers.registry import REGISTRY, names
from ._data import (
    check_cache_dir,
    check_output,
    check_vw_flags,
    data_format,
    expected_format,
    is_stdin,
    read_data,
    too_wide,
    zero_index_hint,
)
from ._params import (
    DEFAULT_HASH_BITS,
    LEARNING_RATE_KEYWORD,
    LOSSES,
    POSITIVE,
    SolverChoice,
    format_option,
    handle_errors,
    multi_class_option,
    n_jobs_option,
    zero_based_option,
)
from ._progress import Progress, run_fit
from ._report import report, unknown_labels
from ._summary import save_and_print, train_summary


@dataclasses.dataclass(frozen=True)
class TrainFlags:
    """The flags of ``train`` (all but DATA), as click parsed them."""

    test_path: str | None
    lam: float | None
    lam_ratio: float | None
    l1_ratio: float
    loss: str
    solver: str
    max_active: int | None
    checkpoint: str | None
    cache_dir: str | None
    features: str | None
    two_stage: float | None
    intercept: bool
    standardize: bool
    multi_class: str
    tol: float
    max_iter: int | None
    passes: int | None
    holdout: int | None
    learning_rate: float | None
    class_weight: str | None
    seed: int | None
    n_jobs: int | None
    n_features: int | None
    zero_based: bool | None
    file_format: str
    hash_bits: int | None
    dask_address: str | None
    output: str | None
    quiet: bool
    as_json: bool
    feature_names: str | None
    #: The names read from --feature-names (one per line), before any data is read.
    names: tuple | None = None


@click.command()
@click.argument("data", nargs=-1, required=True)
@click.option(
    "--test", "test_path", type=click.Path(exists=True, readable=True), help="Held-out data to report metrics on."
)
@click.option("--lam", type=POSITIVE, help="Regularisation strength, mean-loss form (liblinear's C = 1/(n lam)).")
@click.option(
    "--lam-ratio", type=POSITIVE, help="lam as a fraction of lam_max.  [default: 0.01 when --lam is not given]"
)
@click.option(
    "--l1-ratio",
    type=click.FloatRange(0, 1, min_open=True),
    default=1.0,
    show_default=True,
    help="Elastic-net mix: 1 is pure L1.",
)
@click.option(
    "--loss",
    type=click.Choice(LOSSES),
    default="logistic",
    show_default=True,
    help="squared fits a regression (lasso / elastic net); the others classify.",
)
@click.option(
    "--solver",
    type=SolverChoice(),
    default="auto",
    show_default=True,
    help="cd: coordinate descent on DATA loaded into memory (scd, detcd: stochastic and "
    "greedy CD, also in memory).  mp, rmmp, online: streaming solvers reading DATA in "
    "passes, never loading it (rmmp: memory O(d + k^2) whatever n; online: one pass).  "
    "truncated_gradient, sgd_cumulative, smidas: online first-order solvers, streamed, "
    "--passes over DATA with progressive validation (pure L1; no certificate).  auto: "
    "rmmp when --max-active, --checkpoint, --cache or --passes is given, else cd.",
)
@click.option(
    "--max-active",
    type=click.IntRange(min=1),
    metavar="K",
    help="rmmp: the most features in the active set (the sketch is K x K).  [default: 2000]",
)
@click.option(
    "--checkpoint",
    type=click.Path(dir_okay=False),
    metavar="PATH",
    help="The multi-pass solvers (all but online, fcl, dcl_sgd): save the state here after each "
    "pass or iteration (in-memory solvers: at most every 5 s); a run given an existing "
    "checkpoint resumes from it and ends with the model of an uninterrupted run.",
)
@click.option(
    "--cache",
    "cache_dir",
    type=click.Path(file_okay=False),
    metavar="DIR|SIZE",
    help="The streaming solvers: binary chunk cache of DATA, written by the first pass and "
    "read by the later ones (and by later runs). With --features: the memory budget of "
    "the feature cache (e.g. 2GB).",
)
@click.option(
    "--features",
    metavar="SPEC",
    help="Train over a generated feature space, never materialised: dna:D (DATA: one label and one "
    "DNA sequence per line), products:DEGREE or rff:N[:SIGMA] (DATA: svmlight). --solver auto "
    "is then fcl (feature cached loops) and --cache SIZE its memory budget (e.g. 2GB).",
)
@click.option(
    "--two-stage",
    type=click.FloatRange(0, 1, min_open=True),
    metavar="RATIO",
    help="In-memory solvers: after the solve at lam, re-solve on its support at RATIO x lam "
    "(Qin et al.'s two-stage active set; the paper uses 0.1).",
)
@click.option("--intercept/--no-intercept", default=True, show_default=True, help="Fit an unpenalised intercept.")
@click.option(
    "--standardize/--no-standardize",
    default=False,
    show_default=True,
    help="In-memory solvers: scale each column to unit variance for the solve (never centred, sparse "
    "data stay sparse); lam and --lam-ratio refer to the scaled problem, the model's weights to the "
    "original columns.",
)
@multi_class_option()
@click.option(
    "--tol",
    type=POSITIVE,
    default=1e-6,
    show_default=True,
    help="Stop at relative duality gap (or KKT violation) <= tol.",
)
@click.option(
    "--max-iter",
    type=click.IntRange(min=1),
    help="Iterations (cd, scd, detcd) or passes over DATA (the streaming solvers).  "
    "[default: 200; 1 pass for truncated_gradient, sgd_cumulative, smidas]",
)
@click.option(
    "--passes",
    type=click.IntRange(min=1),
    metavar="N",
    help="Passes over DATA: --max-iter under another name, for the streaming solvers "
    "(mp, rmmp and the online first-order ones); not with --max-iter.",
)
@click.option(
    "--holdout",
    type=click.IntRange(min=0),
    metavar="K",
    help="truncated_gradient, sgd_cumulative, smidas: every K-th example is held out, "
    "never learned from; its loss stops the passes early when it stops improving "
    "(0: no holdout).  [default: 10 with several passes, else 0]",
)
@click.option(
    "--learning-rate",
    type=POSITIVE,
    metavar="ETA",
    help="truncated_gradient, sgd_cumulative, smidas: the base learning rate (their "
    "eta0, eta0, eta).  [default: the solver's: 0.5, 0.5, 0.1]",
)
@click.option("--class-weight", type=click.Choice(["balanced"]), help="Weight classes inversely to their frequency.")
@click.option("--seed", type=click.IntRange(min=0), default=None, help="Seed of the solver's coordinate order.")
@n_jobs_option("one-vs-rest's binary problems (in-memory solvers; the same model as one thread)")
@click.option(
    "--n-features",
    type=click.IntRange(min=1),
    help="Width of X (default: largest feature index); a wider file is an error.",
)
@zero_based_option(
    help="Feature indices of svmlight files start at 0 / at 1 (recorded in the model).  "
    "[default: auto; DATA -: one-based]"
)
@format_option("DATA and --test")
@click.option(
    "--hash-bits",
    type=click.IntRange(1, 31),
    metavar="B",
    help="Vowpal Wabbit data: features hashed into 2**B columns (predict and evaluate "
    f"take B from the model).  [default: {DEFAULT_HASH_BITS}]",
)
@click.option(
    "--dask",
    "dask_address",
    metavar="ADDRESS",
    help="Train on a Dask cluster: local:N starts a LocalCluster of N worker processes, "
    "tcp://HOST:PORT joins a running scheduler.  DATA is then one or more partition "
    "files or glob patterns (svmlight, chunk caches, parquet) that the workers read.",
)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Save the model here.")
@click.option("-q", "--quiet", is_flag=True, help="No progress display; only the summary.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option(
    "--feature-names",
    type=click.Path(exists=True, dir_okay=False, readable=True),
    metavar="FILE",
    help="Names of the features, one per line (plain or compressed), kept in the model and shown "
    "by the summary, info, inspect and export.  svmlight: line k names the k-th feature (index k "
    "one-based, k-1 zero-based); they set the width, as --n-features.  Vowpal Wabbit: each line a "
    "feature (name, or ns^name) naming the slot it hashes to.",
)
@handle_errors
def train(
    data,
    test_path,
    lam,
    lam_ratio,
    l1_ratio,
    loss,
    solver,
    max_active,
    checkpoint,
    cache_dir,
    features,
    two_stage,
    intercept,
    standardize,
    multi_class,
    tol,
    max_iter,
    passes,
    holdout,
    learning_rate,
    class_weight,
    seed,
    n_jobs,
    n_features,
    zero_based,
    file_format,
    hash_bits,
    dask_address,
    output,
    quiet,
    as_json,
    feature_names,
):
    """Fit a sparse linear model on DATA and print a summary.

    Classification losses (logistic, probit, squared_hinge) accept any labels
    (more than two classes: the multinomial model, or one-vs-rest, as --multi-class
    says); --loss squared fits a regression.
    With a streaming solver (mp, rmmp, online, truncated_gradient, sgd_cumulative,
    smidas) DATA is read in passes and never loaded; the summary then has no train
    metrics (they would need another pass: use --test or `l1scale evaluate`).
    With --dask ADDRESS, DATA are partition files read by the workers of a Dask cluster.

    DATA may be Vowpal Wabbit text (a name ending in .vw, or --format vw), its
    features hashed into 2**--hash-bits columns; the saved model then has
    2**B features, and predict / evaluate hash VW data with the model's B.

    DATA - reads standard input (svmlight, or VW with --format vw; one-based unless
    --zero-based): `zcat big.gz | l1scale train - --solver truncated_gradient --lam 1e-6
    --n-features N -o m`. One pass of truncated_gradient or online at a given --lam, of
    known width (--n-features, or VW), learns from it as it is read, its first rows' two
    labels as the classes. Other streaming fits read it from a chunk cache spooled in one
    pass (--cache DIR, else a temporary directory removed at the end); the in-memory
    solvers load it. The model records the svmlight index base, which predict and
    evaluate then use.
    """
    # Every flag but DATA, as one object for the helpers below (click passes them one by one).
    flags = TrainFlags(**{name: value for name, value in locals().items() if name != "data"})
    if any(is_stdin(d) for d in data) and (features is not None or dask_address is not None):
        raise click.UsageError(
            f"DATA - (standard input) is not read with {'--features' if features else '--dask'}: give a file"
        )
    if features is not None or solver in names(data="generated"):
        return _train_generated(data, flags)
    if feature_names is not None:
        flags = _read_feature_names(data, flags)
    resolved = _check_flags(flags)
    if dask_address is not None:
        from ._dask import check_dask_flags, close, dask_dataset

        resolved = "rmmp" if solver == "auto" else resolved
        check_dask_flags(
            resolved,
            cache_dir=cache_dir,
            two_stage=two_stage,
            file_format=file_format,
            hash_bits=hash_bits,
            holdout=holdout,
        )
        check_output(output, "'-o' / '--output'")
        check_output(checkpoint, "--checkpoint")
        client, dataset = dask_dataset(dask_address, data, n_features=n_features, zero_based=zero_based)
        try:
            return _train(
                " ".join(data),
                dataset,
                dataclasses.replace(flags, cache_dir=None, two_stage=None, holdout=0, hash_bits=None),
                resolved,
                True,
            )
        finally:
            dataset.close()
            close(client)
    if len(data) != 1:
        raise click.UsageError("give one DATA file (several partition files are read with --dask)")
    data = data[0]
    if not os.path.exists(data) and not is_stdin(data):
        raise click.BadParameter(f"Path {data!r} does not exist.", param_hint="'DATA'")
    _train(data, None, flags, resolved, _streaming_solver(resolved))


def _train_generated(data, f):
    """--features: the flags that apply, then _generated.train_generated."""
    from ._generated import train_generated

    if f.features is None:
        raise click.UsageError(f"--solver {f.solver} trains over a generated feature space: give --features SPEC")
    unused = {
        "--l1-ratio": f.l1_ratio != 1.0,
        "--max-active": f.max_active is not None,
        "--checkpoint": f.checkpoint is not None,
        "--two-stage": f.two_stage is not None,
        "--standardize": f.standardize,
        "--multi-class multinomial": f.multi_class == "multinomial",
        "--passes": f.passes is not None,
        "--holdout": f.holdout is not None,
        "--learning-rate": f.learning_rate is not None,
        "--hash-bits": f.hash_bits is not None,
        "--dask": f.dask_address is not None,
        "--feature-names": f.feature_names is not None,
    }
    given = [flag for flag, used in unused.items() if used]
    if given:
        raise click.UsageError(
            f"{', '.join(given)} do not apply with --features (feature cached loops solve the "
            "pure L1 problem over the generated space in memory)"
        )
    if len(data) != 1:
        raise click.UsageError("give one DATA file with --features")
    if not os.path.exists(data[0]):
        raise click.BadParameter(f"Path {data[0]!r} does not exist.", param_hint="'DATA'")
    if f.solver != "auto" and REGISTRY[f.solver].data == "stream":
        raise click.UsageError(
            f"--solver {f.solver} does not train over --features: use fcl (default), dcl_sgd, "
            "or an in-memory solver (which materialises the features)"
        )
    train_generated(
        data[0],
        features=f.features,
        cache=f.cache_dir,
        solver=f.solver,
        test_path=f.test_path,
        lam=f.lam,
        lam_ratio=f.lam_ratio,
        loss=f.loss,
        intercept=f.intercept,
        tol=f.tol,
        max_iter=f.max_iter or 200,
        class_weight=f.class_weight,
        seed=f.seed,
        output=f.output,
        quiet=f.quiet,
        as_json=f.as_json,
    )


def _train(data, dataset, f, resolved, streamed):
    """The fit and its summary; ``dataset``: a DaskDataset (``--dask``) instead of reading ``data``."""
    if f.two_stage is not None and streamed:
        raise click.BadParameter(
            f"re-solves on the support in memory; --solver {resolved} streams DATA", param_hint="--two-stage"
        )
    if f.standardize and (streamed or dataset is not None):
        raise click.BadParameter(
            f"scales the columns in memory; --solver {resolved} streams DATA", param_hint="--standardize"
        )
    fmt = "svmlight" if dataset is not None else data_format(data, f.file_format)
    if dataset is None:
        check_vw_flags(fmt, data, hash_bits=f.hash_bits, zero_based=f.zero_based, n_features=f.n_features)
    if f.test_path is not None:
        data_format(f.test_path, f.file_format)  # --format vw for a cache directory: a usage error now
    check_output(f.output, "'-o' / '--output'")
    check_output(f.checkpoint, "--checkpoint")
    if dataset is None:
        check_cache_dir(f.cache_dir, data)
    iterations = f.passes or f.max_iter or (1 if _online_first_order(resolved) else 200)
    # Flags -> estimator parameters (the only place the two meet).
    params = {
        "lam": f.lam,
        "lam_ratio": f.lam_ratio,
        "l1_ratio": f.l1_ratio,
        "fit_intercept": f.intercept,
        "solver": f.solver,
        "tol": f.tol,
        "max_iter": iterations,
        "random_state": f.seed,
        "max_active": f.max_active,
        "checkpoint": f.checkpoint,
        "two_stage": f.two_stage,
        "standardize": f.standardize,
    }
    if f.loss != "squared":
        params.update(loss=f.loss, class_weight=f.class_weight, multi_class=f.multi_class, n_jobs=f.n_jobs)
    elif f.multi_class != "auto":
        raise click.BadParameter("applies to classification losses, not --loss squared", param_hint="--multi-class")
    elif f.n_jobs is not None:
        raise click.BadParameter("threads one-vs-rest's problems: not --loss squared", param_hint="--n-jobs")

    spool = None
    try:
        if streamed and is_stdin(data):
            from ._stream import StdinCache

            spool = StdinCache(f.cache_dir)  # the pipe, spooled: a pipe can be read only once
        with expected_format(data, fmt):  # streamed data too: a CSV file says svmlight was expected
            _train_and_report(data, dataset, f, resolved, streamed, params, iterations, fmt, spool)
    finally:
        if spool is not None:
            spool.close()


def _train_and_report(data, dataset, f, resolved, streamed, params, max_iter, fmt, spool):
    """Read, fit, report and save (``spool``: where standard input is spooled, streamed fits)."""
    t0 = time.perf_counter()
    Xt = yt = declared = None
    base = None  # the index base of svmlight training text, recorded in the model
    if streamed:
        from ._stream import stream_zero_based, train_stream

        if f.test_path is not None:  # read before fitting: a bad test file fails fast
            test_base = f.zero_based
            if test_base is None and fmt == "svmlight":  # as the training data are read
                test_base = stream_zero_based(None, data, None, fmt)
            Xt, yt, _ = read_data(
                f.test_path,
                zero_based=test_base,
                n_features=f.n_features,
                width_of=f"--n-features {f.n_features}",
                fmt=f.file_format,
                hash_bits=f.hash_bits,
            )

        def check_test_width(width):  # once the training width is known, before any solving
            if Xt is not None and Xt.shape[1] > width:
                raise too_wide(f.test_path, Xt.shape[1], f"the {width} of the training data {data}")

        if dataset is not None:
            check_test_width(dataset.n_features)
            stream = dataset
        else:
            stream, declared = train_stream(
                data,
                zero_based=f.zero_based,
                n_features=f.n_features,
                cache=spool.path if spool is not None else f.cache_dir,
                on_width=check_test_width,
                fmt=f.file_format,
                hash_bits=f.hash_bits,
                one_pass=_one_pass(resolved, params, f.cache_dir),
            )
    else:
        X, y, w, base = read_data(
            data,
            zero_based=f.zero_based,
            n_features=f.n_features,
            width_of=_width_of(f),
            fmt=f.file_format,
            hash_bits=f.hash_bits,
            return_zero_based=True,
        )
        if f.test_path is not None:  # read before fitting: a bad test file fails fast
            Xt, yt, _ = read_data(
                f.test_path,
                zero_based=f.zero_based if base is None else base,
                n_features=X.shape[1],
                width_of=f"the {X.shape[1]} of the training data {data}",
                fmt=f.file_format,
                hash_bits=f.hash_bits,
            )
    load_seconds = time.perf_counter() - t0
    from ..estimators import SparseLinearRegression, SparseLogisticRegression

    est = (SparseLinearRegression if f.loss == "squared" else SparseLogisticRegression)(**params)
    progress = None
    if not f.quiet:
        if f.loss == "squared" or declared is not None:  # a regression, or two classes declared
            classes = None
        elif streamed:  # the labels are known once the fit's first pass (its label scan) is made

            def classes():
                return _one_vs_rest(est.stream_scan_.classes)
        else:
            classes = _one_vs_rest(np.unique(y), est)
        progress = Progress(
            classes,
            streaming=_streaming_solver(resolved),
            step="chunk" if resolved == "online" else "pass",
            online=_online_first_order(resolved),
            distributed=dataset is not None,
        )
        est.set_params(callback=progress)
    if _online_first_order(resolved):  # the estimator has no holdout or rate: the solver is built here
        est.set_params(
            solver=online_solver(
                resolved, passes=max_iter, holdout=f.holdout, learning_rate=f.learning_rate, callback=progress
            )
        )
    args = (X, y, w) if not streamed else (stream,) if declared is None else (stream, None, None, declared)
    with zero_index_hint(data, f.zero_based or fmt == "vw"), _declared_hint(declared):
        messages, fit_seconds = run_fit(est, data, args, progress)
    if not f.quiet:
        for message in messages:
            click.echo(f"Warning: {message}", err=True)

    if streamed:
        if dataset is None:
            base = stream_zero_based(stream, data, f.zero_based, fmt)
        d, scan = int(est.n_features_in_), est.stream_scan_
        data_info = {"n_samples": int(scan.n_samples), "n_features": d, "nnz": int(scan.nnz)}
        train_report = None  # another pass over DATA: not made
        if Xt is not None and Xt.shape[1] < d:
            Xt = Xt.tocsr(copy=True)
            Xt.resize((Xt.shape[0], d))
    else:
        data_info = {"n_samples": int(X.shape[0]), "n_features": int(X.shape[1]), "nnz": int(X.nnz)}
        train_report = report(est, X, y)
    if f.names is not None:
        _name_features(est, f, fmt, data)
    summary = train_summary(est, data, data_info, train_report, load_seconds, fit_seconds, messages)
    if fmt == "vw":  # only then: the golden svmlight summary keeps its keys
        summary["data"]["format"] = "vw"
        summary["data"]["hash_bits"] = DEFAULT_HASH_BITS if f.hash_bits is None else f.hash_bits
    if f.test_path is not None:
        summary["test"] = {"path": f.test_path, **report(est, Xt, yt)}
        unknown = unknown_labels(est, yt)
        if unknown:
            summary["warnings"].append(f"{f.test_path} has labels {unknown} that are not classes of the training data")
            if not f.quiet:
                click.echo(f"Warning: {summary['warnings'][-1]}", err=True)
    # The model records how svmlight indices were read, so that predict / evaluate read its
    # test files alike (a zero-based file without index 0 is otherwise detected as one-based).
    metadata = None if base is None else {"data": {"format": "svmlight", "zero_based": bool(base)}}
    if fmt == "vw":  # predict / evaluate then read standard input as VW without --format vw
        metadata = {"data": {"format": "vw", "hash_bits": DEFAULT_HASH_BITS if f.hash_bits is None else f.hash_bits}}
    save_and_print(est, summary, f.output, f.as_json, metadata=metadata)


def _read_feature_names(data, f):
    """--feature-names read before any data (a bad file fails fast); for svmlight data and caches
    the names set the width, as --n-features (which, if given too, must agree)."""
    from ..feature_names import read_feature_names

    try:
        names = tuple(read_feature_names(f.feature_names))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--feature-names") from None
    hashed = f.dask_address is None and all(data_format(d, f.file_format) == "vw" for d in data)
    if hashed:
        return dataclasses.replace(f, names=names)
    if f.n_features is not None and f.n_features != len(names):
        raise click.BadParameter(
            f"{f.feature_names} names {len(names)} features, --n-features is {f.n_features}",
            param_hint="--feature-names",
        )
    return dataclasses.replace(f, names=names, n_features=len(names))


def _width_of(f):
    """Whose width a too-wide DATA exceeds: the names file's or --n-features."""
    if f.names is not None:
        return f"the {len(f.names)} named in --feature-names {f.feature_names}"
    return f"--n-features {f.n_features}"


def _name_features(est, f, fmt, data):
    """Give the fitted model the names of --feature-names (VW data: of the slots they hash to)."""
    names = list(f.names)
    if fmt == "vw":
        from ..feature_names import hashed_slot_names

        names = hashed_slot_names(names, DEFAULT_HASH_BITS if f.hash_bits is None else f.hash_bits)
    width = int(np.shape(est.coef_)[-1])
    if len(names) != width:
        raise click.ClickException(
            f"{f.feature_names} names {len(names)} features, but the model of {data} has {width}"
        )
    est.set_feature_names(names)


@contextlib.contextmanager
def _declared_hint(declared):
    """Add to the error of a label outside the declared classes how to fit such a pipe."""
    from ..exceptions import DataFormatError

    try:
        yield
    except DataFormatError as exc:
        if declared is None or "declared classes" not in str(exc):
            raise
        raise click.ClickException(
            f"{exc}: standard input is learned from as it is read, with the two labels of "
            "its first rows as the classes; give --cache DIR to spool it first (a label "
            "pass finds every class)"
        ) from None


def _one_pass(resolved, params, cache_dir):
    """Whether standard input may be learned from as it is read (train_stream's ``one_pass``):
    one pass of a solver that needs no label pass (truncated gradient, the Online algorithm),
    a classifier at a given lam, nothing else that needs the data twice (--cache asks for the
    spool, --checkpoint resumes by reading again, --class-weight balanced needs the counts)."""
    one = resolved == "online" or (resolved == "truncated_gradient" and params["max_iter"] == 1)
    return (
        one
        and "loss" in params
        and params["lam"] is not None
        and params.get("class_weight") is None
        and params["checkpoint"] is None
        and cache_dir is None
    )


def _check_flags(f):
    """Usage errors among the flags (before any reading); returns the solver "auto" picks."""
    if f.lam is not None and f.lam_ratio is not None:
        raise click.UsageError("give --lam or --lam-ratio, not both")
    if f.passes is not None and f.max_iter is not None:
        raise click.UsageError(
            "give --passes or --max-iter, not both (--passes is --max-iter for the streaming solvers)"
        )
    if f.loss == "squared" and f.class_weight is not None:
        raise click.BadParameter("does not apply to --loss squared (a regression)", param_hint="--class-weight")
    resolved = f.solver
    if f.solver == "auto":  # the flags that only streaming solvers take pick RMMP
        resolved = "rmmp" if (f.max_active, f.checkpoint, f.cache_dir, f.passes) != (None,) * 4 else "cd"
    if f.max_active is not None and resolved != "rmmp":
        raise click.BadParameter(
            f"is RMMP's active-set size; it does not apply to --solver {resolved}", param_hint="--max-active"
        )
    if f.checkpoint is not None and not REGISTRY[resolved].resumable:
        raise click.BadParameter(
            f"applies to the multi-pass solvers, not to --solver {resolved}", param_hint="--checkpoint"
        )
    if f.cache_dir is not None and not _streaming_solver(resolved):
        raise click.BadParameter(
            f"applies to the streaming solvers ({_names(_streaming_solver)}), not "
            f"to --solver {resolved}, which loads DATA into memory (a cache for it: "
            f"`l1scale convert`)",
            param_hint="--cache",
        )
    if f.passes is not None and (not _streaming_solver(resolved) or resolved == "online"):
        why = "makes one pass" if resolved == "online" else "loads DATA into memory; its --max-iter counts iterations"
        raise click.BadParameter(
            f"applies to the streaming solvers that make passes "
            f"({_names(_streaming_solver, 'online')}); --solver {resolved} {why}",
            param_hint="--passes",
        )
    for value, flag, takes in (
        (f.holdout, "--holdout", _online_first_order),
        (f.learning_rate, "--learning-rate", LEARNING_RATE_KEYWORD.__contains__),
    ):
        if value is not None and not takes(resolved):
            raise click.BadParameter(
                f"applies to the online first-order solvers ({_names(takes)}), not to --solver {resolved}",
                param_hint=flag,
            )
    if f.l1_ratio != 1 and _online_first_order(resolved) and _solver_class(resolved).pure_l1:
        raise click.BadParameter(
            f"--solver {resolved} minimises the pure L1 problem: --l1-ratio must be 1", param_hint="--l1-ratio"
        )
    _check_solver_takes_loss(resolved, f.loss)
    return resolved


def _solver_class(name):
    from ..solvers import SOLVERS

    return SOLVERS[name]


def _streaming_solver(name):
    """Whether the registered solver ``name`` reads its data in passes (mp, rmmp, online, ...)."""
    return name in REGISTRY and REGISTRY[name].data == "stream"


def _online_first_order(name):
    """Whether ``name`` is an online first-order solver (truncated_gradient, sgd_cumulative, smidas):
    passes with progressive validation and a holdout, no objective or certificate."""
    return name in REGISTRY and REGISTRY[name].family == "online_first_order"


def _names(test, *but):
    """The registered solvers passing ``test``, but not ``but``, as a comma-separated list."""
    return ", ".join(name for name in REGISTRY if test(name) and name not in but)


def online_solver(name, *, passes, holdout=None, learning_rate=None, callback=None):
    """The online first-order solver the flags ask for (the estimator's ``solver=``):
    --passes -> max_iter, --holdout -> holdout (None: the solver's default),
    --learning-rate -> its base rate (LEARNING_RATE_KEYWORD; None: the solver's default)."""
    kw = {"max_iter": passes, "holdout": holdout, "callback": callback}
    if learning_rate is not None:
        kw[LEARNING_RATE_KEYWORD[name]] = learning_rate
    return _solver_class(name)(**kw)


def _check_solver_takes_loss(solver, loss):
    """A usage error (before any reading) when ``solver`` cannot minimise ``loss``."""
    from ..losses import get_loss
    from ..solvers import SOLVERS

    missing = [attr for attr in getattr(SOLVERS[solver], "requires", ()) if not getattr(get_loss(loss), attr, None)]
    if missing:
        raise click.BadParameter(
            f"--solver {solver} cannot minimise --loss {loss} (it needs a loss with {', '.join(missing)})",
            param_hint="--solver",
        )


def _one_vs_rest(classes, est=None):
    """The classes of the one-vs-rest problems (more than two), or None: the progress's class
    column (None too for the one multinomial problem that ``est``, fitted in memory, will solve)."""
    if est is not None and classes.shape[0] > 2:
        from sklearn.base import clone

        from .._multinomial_fit import wanted

        if wanted(clone(est), classes.shape[0]):
            return None
    return classes if classes.shape[0] > 2 else None
