"""Models of Hugging Face transformers 5.24.0 built from configs (nothing is downloaded), as the
library defines them, trained by a DeepSpeed loop whose loss is the model's own or one the loop
writes by hand. Needs the Trainer stack's Python (tests/watch/hf_trainer_python).

--model: gpt2 (GPT2LMHeadModel), llama (LlamaForCausalLM), bert (BertForSequenceClassification),
bert-pretraining (BertForPreTraining: a masked-LM head and a next-sentence head), t5
(T5ForConditionalGeneration), mixtral (MixtralForCausalLM: a mixture of experts, 4 experts, top 2;
--router-loss adds the library's load-balancing loss to its loss, output_router_logits=True;
--experts its experts' kernel).
--loss: model (the loss the model computes in its own forward from `labels`), cross-entropy
(F.cross_entropy on the logits), nll (F.nll_loss(F.log_softmax(...))), mse (F.mse_loss, bert with
one output), mse-by-hand (((pred - y) ** 2).mean(), bert with one output), bce
(F.binary_cross_entropy_with_logits on multi-hot labels, bert), heads (bert-pretraining: the
loop's cross entropy of each head, summed). --size small (the test suite's: 1-2 layers, 16-32
wide) or base (the library's default config: GPT-2 124M, BERT base, T5 small). Dropout is 0 (a
random mask differs in the golden's float64 copy). Planted bugs: common.model_parser()'s."""
import torch
import torch.nn.functional as F

import common  # noqa: I100 (sets the CPU accelerator before deepspeed is imported)
import transformers  # noqa: E402

LOSSES = {"gpt2": ("model", "cross-entropy"), "llama": ("model", "cross-entropy", "nll"),
          "bert": ("cross-entropy", "nll", "mse", "mse-by-hand", "bce", "model"),
          "bert-pretraining": ("model", "heads"), "t5": ("model", "cross-entropy"),
          "mixtral": ("model", "cross-entropy")}
VOCABULARY, CLASSES = 64, 4

parser = common.model_parser(sizes=("small", "base"))
parser.add_argument("--model", choices=sorted(LOSSES), required=True)
parser.add_argument("--loss", default="model")
parser.add_argument("--length", type=int, default=8)
parser.add_argument("--router-loss", action="store_true")
parser.add_argument("--experts", choices=("eager", "batched_mm", "grouped_mm"),
                    help="mixtral: MixtralConfig(experts_implementation=...); the library's "
                         "choice on the CPU is grouped_mm, which has no float64 kernel")
args = parser.parse_args()
if args.loss not in LOSSES[args.model]:
    parser.error(f"--loss {args.loss} is not one of {args.model}'s: {', '.join(LOSSES[args.model])}")
small = args.size == "small"


def built():
    torch.manual_seed(0)
    if args.model == "gpt2":
        config = transformers.GPT2Config(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
        if small:
            config.update(dict(vocab_size=VOCABULARY, n_positions=16, n_embd=16, n_layer=2,
                               n_head=2))
        return transformers.GPT2LMHeadModel(config)
    if args.model == "llama":
        return transformers.LlamaForCausalLM(transformers.LlamaConfig(
            vocab_size=VOCABULARY, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
            num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=16))
    if args.model in ("bert", "bert-pretraining"):
        config = transformers.BertConfig(hidden_dropout_prob=0.0,
                                         attention_probs_dropout_prob=0.0)
        if small:
            config.update(dict(vocab_size=VOCABULARY, hidden_size=16, num_hidden_layers=2,
                               num_attention_heads=2, intermediate_size=32,
                               max_position_embeddings=16))
        if args.model == "bert-pretraining":
            return transformers.BertForPreTraining(config)
        config.num_labels = 1 if args.loss in ("mse", "mse-by-hand") else CLASSES
        if args.loss == "bce":
            config.problem_type = "multi_label_classification"
        return transformers.BertForSequenceClassification(config)
    if args.model == "t5":
        config = transformers.T5Config(dropout_rate=0.0, decoder_start_token_id=0,
                                       pad_token_id=0)  # as t5-small's config says
        if small:
            config.update(dict(vocab_size=VOCABULARY, d_model=16, d_kv=8, d_ff=32, num_layers=1,
                               num_decoder_layers=1, num_heads=2))
        return transformers.T5ForConditionalGeneration(config)
    return transformers.MixtralForCausalLM(transformers.MixtralConfig(
        vocab_size=VOCABULARY, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=16,
        num_local_experts=4, num_experts_per_tok=2, output_router_logits=args.router_loss,
        experts_implementation=args.experts))


def classes_of(x):
    """A sequence's class, a value for regression, and multi-hot labels, all read off its ids."""
    return x[:, 0] % CLASSES, (x[:, 0] % 7).double() / 7, F.one_hot(x[:, 1] % CLASSES,
                                                                     CLASSES).double()


def micro_step_loss(engine, x, y):
    """The micro-batch's loss, as --model and --loss say."""
    if args.model in ("gpt2", "llama", "mixtral"):
        if args.loss == "model":  # the library shifts the labels itself
            return engine(input_ids=x, labels=x).loss
        logits = engine(input_ids=x).logits  # (B, T, V); y is x shifted by one
        if args.loss == "nll":
            return F.nll_loss(F.log_softmax(logits.view(-1, logits.size(-1)), dim=-1), y.view(-1))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
    if args.model == "t5":
        if args.loss == "model":
            return engine(input_ids=x, labels=y).loss
        logits = engine(input_ids=x, decoder_input_ids=engine.module._shift_right(y)).logits
        return F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
    if args.model == "bert-pretraining":
        masked = y.masked_fill(torch.arange(y.shape[1]) % 3 != 0, -100)  # every third predicted
        next_sentence = x[:, 0] % 2
        if args.loss == "model":
            return engine(input_ids=x, labels=masked, next_sentence_label=next_sentence).loss
        out = engine(input_ids=x)
        return (F.cross_entropy(out.prediction_logits.view(-1, VOCABULARY), masked.view(-1)) +
                F.cross_entropy(out.seq_relationship_logits, next_sentence))
    label, value, multi_hot = classes_of(x)
    if args.loss == "model":
        return engine(input_ids=x, labels=label).loss
    logits = engine(input_ids=x).logits
    if args.loss == "cross-entropy":
        return F.cross_entropy(logits, label)
    if args.loss == "nll":
        return F.nll_loss(F.log_softmax(logits, dim=-1), label)
    if args.loss == "mse":
        return F.mse_loss(logits.squeeze(-1), value.to(logits.dtype))
    if args.loss == "mse-by-hand":
        return ((logits.squeeze(-1) - value.to(logits.dtype)) ** 2).mean()
    return F.binary_cross_entropy_with_logits(logits, multi_hot.to(logits.dtype))


torch.set_num_threads(1)
model = built()
engine, _, _, rank, world_size = common.initialize(args, model)
for x, y in common.token_id_batches(args, rank, world_size, model.config.vocab_size, args.length):
    if engine.global_steps >= args.steps:
        break
    common.backward_and_step(engine, micro_step_loss(engine, x, y), args)
