// Round-trip tests for the tir.v1 wire contract.
//
// Every message type of every tir/v1 file is filled through reflection (every
// field set, nested messages to a bounded depth), serialized, parsed back and
// compared field by field, in binary and in JSON. A hand-built graph with
// dynamic dims and strides is checked value by value.

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/descriptor.pb.h"
#include "google/protobuf/dynamic_message.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tir/v1/compiler_service.pb.h"
#include "tir/v1/graph.pb.h"
#include "tir/v1/kernel.pb.h"
#include "tir/v1/worker_service.pb.h"

namespace tir {
namespace {

using ::google::protobuf::Descriptor;
using ::google::protobuf::DescriptorPool;
using ::google::protobuf::FieldDescriptor;
using ::google::protobuf::FileDescriptor;
using ::google::protobuf::Message;
using ::google::protobuf::Reflection;
using ::google::protobuf::util::MessageDifferencer;

// Sets every field of `msg` to a value derived from `seed`; recurses into
// message fields up to `depth` levels, and sets each oneof's last member.
void Fill(Message* msg, int depth, int seed) {
  const Descriptor* d = msg->GetDescriptor();
  const Reflection* r = msg->GetReflection();
  if (d->full_name() == "google.protobuf.Timestamp" ||
      d->full_name() == "google.protobuf.Duration") {
    // Well-known types have range rules in JSON: seconds and nanos in range.
    r->SetInt64(msg, d->FindFieldByName("seconds"), 1700000000 + seed % 1000);
    r->SetInt32(msg, d->FindFieldByName("nanos"), 1000 * (seed % 1000));
    return;
  }
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    const int v = seed * 31 + i + 1;
    if (f->is_map()) {
      Message* entry = r->AddMessage(msg, f);
      Fill(entry, depth, v);
      continue;
    }
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (depth <= 0) continue;
      Message* child = f->is_repeated() ? r->AddMessage(msg, f) : r->MutableMessage(msg, f);
      Fill(child, depth - 1, v);
      continue;
    }
    const int reps = f->is_repeated() ? 2 : 1;
    for (int k = 0; k < reps; ++k) {
      const int x = v + k;
      switch (f->cpp_type()) {
        case FieldDescriptor::CPPTYPE_INT32:
          f->is_repeated() ? r->AddInt32(msg, f, -x) : r->SetInt32(msg, f, -x);
          break;
        case FieldDescriptor::CPPTYPE_INT64:
          f->is_repeated() ? r->AddInt64(msg, f, -(int64_t{1} << 40) - x)
                           : r->SetInt64(msg, f, -(int64_t{1} << 40) - x);
          break;
        case FieldDescriptor::CPPTYPE_UINT32:
          f->is_repeated() ? r->AddUInt32(msg, f, x) : r->SetUInt32(msg, f, x);
          break;
        case FieldDescriptor::CPPTYPE_UINT64:
          f->is_repeated() ? r->AddUInt64(msg, f, (uint64_t{1} << 50) + x)
                           : r->SetUInt64(msg, f, (uint64_t{1} << 50) + x);
          break;
        case FieldDescriptor::CPPTYPE_DOUBLE:
          f->is_repeated() ? r->AddDouble(msg, f, x + 0.25) : r->SetDouble(msg, f, x + 0.25);
          break;
        case FieldDescriptor::CPPTYPE_FLOAT:
          f->is_repeated() ? r->AddFloat(msg, f, x + 0.5f) : r->SetFloat(msg, f, x + 0.5f);
          break;
        case FieldDescriptor::CPPTYPE_BOOL:
          f->is_repeated() ? r->AddBool(msg, f, true) : r->SetBool(msg, f, true);
          break;
        case FieldDescriptor::CPPTYPE_ENUM: {
          const auto* e = f->enum_type();
          const auto* ev = e->value(e->value_count() - 1 - (x % e->value_count()));
          if (ev->number() == 0 && e->value_count() > 1) ev = e->value(1);
          f->is_repeated() ? r->AddEnum(msg, f, ev) : r->SetEnum(msg, f, ev);
          break;
        }
        case FieldDescriptor::CPPTYPE_STRING: {
          std::string s = "s" + std::to_string(x);
          if (f->type() == FieldDescriptor::TYPE_BYTES) s.push_back('\0');
          f->is_repeated() ? r->AddString(msg, f, s) : r->SetString(msg, f, s);
          break;
        }
        case FieldDescriptor::CPPTYPE_MESSAGE:
          break;
      }
    }
  }
}

std::vector<const Descriptor*> AllMessages() {
  std::vector<const Descriptor*> out;
  for (const Descriptor* anchor :
       {tir::v1::Graph::descriptor(), tir::v1::KernelBundle::descriptor(),
        tir::v1::CompileRequest::descriptor(), tir::v1::WorkItem::descriptor()}) {
    const FileDescriptor* file = anchor->file();
    std::function<void(const Descriptor*)> add = [&](const Descriptor* d) {
      if (d->options().map_entry()) return;
      out.push_back(d);
      for (int i = 0; i < d->nested_type_count(); ++i) add(d->nested_type(i));
    };
    for (int i = 0; i < file->message_type_count(); ++i) add(file->message_type(i));
  }
  return out;
}

TEST(ProtoRoundTrip, CoversEveryFileOfTheContract) {
  std::set<std::string> files;
  for (const Descriptor* d : AllMessages()) files.insert(d->file()->name());
  EXPECT_THAT(files, ::testing::UnorderedElementsAre(
                         "tir/v1/graph.proto", "tir/v1/kernel.proto",
                         "tir/v1/compiler_service.proto", "tir/v1/worker_service.proto"));
  EXPECT_GE(AllMessages().size(), 50u);
}

TEST(ProtoRoundTrip, EveryMessageSurvivesBinaryAndJson) {
  google::protobuf::DynamicMessageFactory factory;
  for (const Descriptor* d : AllMessages()) {
    SCOPED_TRACE(d->full_name());
    const Message* prototype = factory.GetPrototype(d);
    std::unique_ptr<Message> original(prototype->New());
    Fill(original.get(), /*depth=*/3, /*seed=*/7);
    ASSERT_GT(original->ByteSizeLong(), 0u) << "filling set nothing";

    std::string wire;
    ASSERT_TRUE(original->SerializeToString(&wire));
    std::unique_ptr<Message> parsed(prototype->New());
    ASSERT_TRUE(parsed->ParseFromString(wire));
    std::string diff;
    MessageDifferencer differ;
    differ.ReportDifferencesToString(&diff);
    EXPECT_TRUE(differ.Compare(*original, *parsed)) << diff;

    std::string json;
    ASSERT_TRUE(google::protobuf::util::MessageToJsonString(*original, &json).ok());
    std::unique_ptr<Message> from_json(prototype->New());
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, from_json.get()).ok()) << json;
    EXPECT_TRUE(MessageDifferencer::ApproximatelyEquals(*original, *from_json)) << json;
  }
}

TEST(ProtoRoundTrip, GraphWithDynamicDimsAndStridesSurvives) {
  tir::v1::Graph g;
  g.set_schema_version(1);
  g.set_name("dyn");
  tir::v1::Value* x = g.add_inputs();
  x->set_id(0);
  x->set_name("x");
  x->mutable_type()->set_dtype(tir::v1::DTYPE_BF16);
  for (int64_t d : {int64_t{-1}, int64_t{128}}) x->mutable_type()->add_shape(d);
  for (int64_t s : {int64_t{1}, int64_t{-1}}) x->mutable_type()->add_strides(s);
  tir::v1::Op* op = g.add_ops();
  op->set_kind("reduce");
  op->add_operands(0);
  tir::v1::Value* y = op->add_results();
  y->set_id(1);
  y->mutable_type()->set_dtype(tir::v1::DTYPE_F32);
  y->mutable_type()->add_shape(-1);
  y->mutable_type()->add_shape(1);
  (*op->mutable_attributes())["reduction_mode"].set_enum_value("add");
  (*op->mutable_attributes())["dims"].mutable_ints()->add_values(1);
  g.add_outputs()->set_value(1);

  tir::v1::GraphSource src;
  *src.mutable_graph() = g;
  std::string wire = src.SerializeAsString();
  tir::v1::GraphSource back;
  ASSERT_TRUE(back.ParseFromString(wire));
  ASSERT_TRUE(back.has_graph());
  const tir::v1::Value& bx = back.graph().inputs(0);
  EXPECT_EQ(bx.type().dtype(), tir::v1::DTYPE_BF16);
  EXPECT_THAT(bx.type().shape(), ::testing::ElementsAre(-1, 128));
  EXPECT_THAT(bx.type().strides(), ::testing::ElementsAre(1, -1));
  EXPECT_EQ(back.graph().ops(0).attributes().at("reduction_mode").enum_value(), "add");
  EXPECT_THAT(back.graph().ops(0).attributes().at("dims").ints().values(),
              ::testing::ElementsAre(1));
  EXPECT_TRUE(MessageDifferencer::Equals(g, back.graph()));
}

TEST(ProtoRoundTrip, UnsetOneofIsDistinguishable) {
  tir::v1::GraphSource src;
  EXPECT_EQ(src.source_case(), tir::v1::GraphSource::SOURCE_NOT_SET);
  src.set_mlir_text("tir.graph @g() { tir.results }");
  tir::v1::GraphSource back;
  ASSERT_TRUE(back.ParseFromString(src.SerializeAsString()));
  EXPECT_EQ(back.source_case(), tir::v1::GraphSource::kMlirText);
}

}  // namespace
}  // namespace tir
