"""Leaks a task did not declare, found from the data itself (part of step 2, the split audit).

The split audit checks what a task *declares*: groups, raw content, a time split. These
detectors look for what it did not declare:

1. **Id-like fields shared across splits** (``id_field_warnings``). A raw field is id-like when
   its values repeat within a split (several examples per value), it has at least
   ``id_min_distinct`` distinct values (a categorical feature with few values never qualifies),
   and either a word of its name says identifier (``ID_WORDS``: ``patient_id``, ``userId``,
   ``session``, ``doc``...) or its values look like one (strings without whitespace that carry a
   digit: ``P0042``, ``user-17``, a hash). Numbers that are features (``age``, counts) are not
   id-like unless their name says so. Skipped: the declared group (a field one-to-one with
   ``Example.group``) and the target (a field one-to-one with the encoded label, or the
   task's ``raw_label``). Warn when at least ``id_min_shared`` of a split's values, and
   ``id_min_shared_share`` of them, are also in an earlier split.
2. **Duplicates behind ids** (``duplicate_findings``). What the model sees — the collated
   tensors of each example alone, without ``index`` and without integer scalars that are
   distinct on every example (ids) — is hashed with its label: equal hashes in two splits are a
   ``fail``, as are texts equal after normalisation (Unicode NFKC, case, punctuation,
   whitespace). Near-duplicates are a ``warn``: vector inputs at an RMS distance per
   standardised feature below ``near_dup_rms`` and below ``near_dup_relative`` of the median
   nearest distance between the two splits; texts (the raw string fields of several words)
   whose normalised character ``shingle``-grams overlap (Jaccard) at least ``shingle_jaccard``
   *and* whose targets agree (equal class, or target tokens overlapping as much): a template
   filled with another word and another answer is not one (counted, not flagged).
3. **Time-stamped data split at random** (``time_warnings``): with every example timed and a split
   not by time, warn when more than ``time_inside_share`` of a later split's times fall strictly
   inside the training range. Not when the time is a property of the declared group (every group
   of two or more examples has one time and such groups hold most examples): the group split then
   keeps each moment on one side (the embedded instruction data: one time per document).
4. **Target leakage** (``target_leak_warnings``): for vector inputs with one label per example, a
   single input feature whose |Pearson correlation| with the label, or whose best single
   threshold's balanced accuracy for one class against the rest, is at least ``leak_score``;
   for token inputs (``token_leak_warnings``), a token whose presence separates one class from
   the rest at that balanced accuracy (the class written into the text); for a continuous target
   (``linear_leak_warnings``), a linear function of all the inputs fitted on train that gives a later
   split's target exactly (the target spread over several features: a window scaled with its target day);
   with the inputs of the few examples before it in time too (``window_target_warnings``: a rolling mean
   that includes the day to forecast), where those earlier inputs alone leave the target unexplained.
5. **Identities made of several fields** (``composite_id_warnings``): a pair or triple of scalar
   fields (first name + last name + birth year) that names one identity across splits, whose shared
   values' later examples carry the earlier label far above chance.
6. **Inputs of one split drawn from another distribution** (``token_skew_warnings``): the
   Jensen-Shannon divergence of a later split's token frequencies from train's, against the same
   between two halves of train split by group (validation alone upper-cased, another template); for
   vector inputs (``feature_skew_warnings``), a feature whose mean or spread in a later split moves
   far from train's (a scaler applied to train only), and below that every value of a split carried from
   train's by one affine map, or a float target moved while the inputs did not
   (``split_transform``: another normalisation, a log in another base); for sentence pairs (``segment_order_warnings``),
   training's pairs with the longer segment first and a later split's with it second (columns swapped).
7. **Overlapping windows split at random** (``shifted_window_warnings``): a later split's sequence
   inputs that equal a training example's shifted by a few steps on the overlap, with a neighbour on
   each side (windows cut with a stride shorter than the window, then scattered).
8. **One label for all of training** (``constant_label_findings``, a ``fail``): every training
   example's single label is the same value while a later split's take several (answer options
   never shuffled in training: the right one always first).
9. **One class on another scale** (``class_scale_warnings``): vector inputs whose peak magnitude
   separates two training classes completely, their medians ``class_scale_ratio`` times apart or
   more (a ``/ 255`` applied twice to one class's source).
10. **A training-only transform that changes the class** (``train_transform_warnings``): vector
    inputs that differ from their raw array in training only, and then lie nearest another class's
    mean far more often than untransformed ones (a horizontal flip of left/right arrows); for a
    regression, one that leaves the target as it was where it moves what the target means
    (``transformed_targets``: a flipped image keeping its blob's x).
11. **A category coded out of order as a regression target** (``ordinal_code_warnings``): a float
    target one-to-one with a string field of 3-6 values whose codes, in another order, a linear fit
    of the inputs explains far better ('low' < 'medium' < 'high' coded alphabetically).
12. **A regression target in two units** (``target_unit_warnings``): positive float targets that fall
    in two separate groups whose medians are a power-of-ten unit factor apart (centimetres and
    metres merged without a conversion), naming the field that tells which when there is one.
13. **Training-only mixup or grayscale that breaks the label** (``train_augment_warnings``): training
    inputs that are mixes of two training examples labelled with one example's class where the other
    weighs more, or grey versions of colour inputs whose classes only colour tells apart.
14. **A later split scaled with its own statistics** (``own_statistics_warnings``): validation's
    continuous features with mean 0 and standard deviation 1 (or min 0 and max 1) exactly, as only a
    scaler fitted on that split gives.
15. **A continuous regression target clipped at both ends** (``clipped_target_warnings``): training's
    float targets piled up exactly at their smallest and their largest value (5% or more each) with
    continuous values between (standardised targets clipped to [0, 1]).
16. **A category coded per split** (``category_code_warnings``): an integer input that codes a string
    field of the examples one way in training and another in a later split (``pd.factorize`` per split),
    or a one-hot coding whose column for a value moves (``pd.get_dummies`` per split).
17. **A vocabulary fitted per split** (``decoded_text_warnings``): a later split's token ids that decode,
    through ``decode_tokens``, to other words than its examples' text, where training's read as theirs.
18. **Values that fill one split** (``one_split_value_warnings``): a scalar integer input on one value in
    most of a later split and rare in training (unseen categories mapped to a lookup's default index), a
    raw text field empty in one split and not the other (a column missing from one export).
19. **Colour channels in another order** (``channel_order_warnings``): a later split's images whose
    per-class pixel quantiles match training's far better with the channels permuted (BGR from cv2).
20. **Partial copies** (``partial_copy_warnings``): a later example equal to a training example to the
    last bit in half or more of its continuous features, other in the rest (a one-to-many merge).
21. **Missing values filled per class** (``class_fill_warnings``): a continuous feature holding one exact
    value per class on many rows (``fillna`` with ``groupby(label).transform("mean")``).
22. **A target encoding over every split** (``label_encoding_warnings``): a feature that is each value of a
    field's (smoothed) mean label computed over training and later splits' rows alike.
23. **Training images mirrored or rotated in a later split** (``transformed_copy_warnings``): copies made
    before the split (flipped or turned files saved under new names), exact under the square's symmetries.

Cost: examples of equal shapes are collated together, hashing is linear; nearest neighbours are
chunked matrix products (O(n_a x n_b x features)); shingle overlaps a sort-join over shingle ids
(only pairs sharing a shingle are formed); the threshold scan sorts each feature once. The whole
split audit takes about 0.2 s on digits (1,797 vectors) and 0.1 s on the 733 instructions
(2-core CPU), most of it the task's own encode and collate.

Modules: ``thresholds``, ``model_views`` (what the model sees), ``id_fields`` (1), ``duplicates`` (2, with
``vectors`` and ``texts`` for the near-duplicates), ``time_split`` (3), ``target_leak``, ``token_leak`` and ``linear_leak`` (4),
``composite_ids`` (5), ``token_skew``, ``feature_skew`` and ``segment_order`` (6), ``shifted_windows`` (7),
``constant_labels`` (8), ``class_scale`` (9), ``train_transform`` (10), ``ordinal_codes`` (11), ``target_units`` (12), ``train_augment`` (13), ``own_statistics`` (14),
``clipped_targets`` (15).
"""

from pilot.checks.leaks.category_codes import category_code_warnings
from pilot.checks.leaks.channel_order import channel_order_warnings
from pilot.checks.leaks.class_fill import class_fill_warnings
from pilot.checks.leaks.class_scale import class_scale_warnings
from pilot.checks.leaks.clipped_targets import clipped_target_warnings
from pilot.checks.leaks.composite_ids import composite_id_warnings
from pilot.checks.leaks.constant_labels import constant_label_findings
from pilot.checks.leaks.decoded_text import decoded_text_warnings
from pilot.checks.leaks.duplicates import duplicate_findings
from pilot.checks.leaks.feature_skew import feature_skew_warnings
from pilot.checks.leaks.id_fields import id_field_warnings, name_says_id
from pilot.checks.leaks.identical_pairs import identical_pair_warnings
from pilot.checks.leaks.label_encoding import label_encoding_warnings
from pilot.checks.leaks.label_relation import label_relation_warnings
from pilot.checks.leaks.linear_leak import linear_leak_warnings
from pilot.checks.leaks.model_views import ModelViews, model_views
from pilot.checks.leaks.one_split_values import one_split_value_warnings
from pilot.checks.leaks.ordinal_codes import ordinal_code_warnings
from pilot.checks.leaks.own_statistics import own_statistics_warnings
from pilot.checks.leaks.partial_copies import partial_copy_warnings
from pilot.checks.leaks.segment_order import segment_order_warnings
from pilot.checks.leaks.shifted_windows import shifted_window_warnings
from pilot.checks.leaks.target_leak import best_threshold_balanced_accuracy, target_leak_warnings
from pilot.checks.leaks.target_units import target_unit_warnings
from pilot.checks.leaks.texts import normalise_text, text_fields
from pilot.checks.leaks.thresholds import LeakThresholds, thresholds_dict
from pilot.checks.leaks.time_split import time_warnings
from pilot.checks.leaks.token_leak import token_leak_warnings
from pilot.checks.leaks.token_skew import token_skew_warnings
from pilot.checks.leaks.train_augment import train_augment_warnings
from pilot.checks.leaks.train_transform import train_transform_warnings
from pilot.checks.leaks.transformed_copies import transformed_copy_warnings
from pilot.checks.leaks.vectors import nearest
from pilot.checks.leaks.window_target import window_target_warnings

__all__ = [
    "category_code_warnings",
    "class_fill_warnings",
    "label_encoding_warnings",
    "window_target_warnings",
    "decoded_text_warnings",
    "one_split_value_warnings",
    "channel_order_warnings",
    "partial_copy_warnings",
    "transformed_copy_warnings",
    "clipped_target_warnings",
    "own_statistics_warnings",
    "train_augment_warnings",
    "target_unit_warnings",
    "ordinal_code_warnings",
    "train_transform_warnings",
    "class_scale_warnings",
    "LeakThresholds",
    "ModelViews",
    "model_views",
    "id_field_warnings",
    "composite_id_warnings",
    "constant_label_findings",
    "duplicate_findings",
    "time_warnings",
    "target_leak_warnings",
    "token_leak_warnings",
    "linear_leak_warnings",
    "shifted_window_warnings",
    "token_skew_warnings",
    "feature_skew_warnings",
    "label_relation_warnings",
    "identical_pair_warnings",
    "segment_order_warnings",
    "normalise_text",
    "text_fields",
    "nearest",
    "best_threshold_balanced_accuracy",
    "thresholds_dict",
    "name_says_id",
]
