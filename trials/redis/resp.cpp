#include "trials/redis/resp.hpp"

#include <hiredis/hiredis.h>
#include <hiredis/read.h>

#include <memory>

namespace hpo::trials::redis {

Reply from_hiredis(const redisReply* r) {
  Reply out;
  switch (r->type) {
    case REDIS_REPLY_STRING:
      out.type = Reply::Type::kString;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_STATUS:
      out.type = Reply::Type::kStatus;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ERROR:
      out.type = Reply::Type::kError;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_INTEGER:
      out.type = Reply::Type::kInteger;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_ARRAY:
      out.type = Reply::Type::kArray;
      out.elements.reserve(r->elements);
      for (size_t i = 0; i < r->elements; ++i) out.elements.push_back(from_hiredis(r->element[i]));
      break;
    default:
      out.type = Reply::Type::kNil;
  }
  return out;
}

std::string resp_command(const std::vector<std::string>& argv) {
  std::string out = "*" + std::to_string(argv.size()) + "\r\n";
  for (const auto& a : argv) {
    out += "$" + std::to_string(a.size()) + "\r\n";
    out += a;
    out += "\r\n";
  }
  return out;
}

namespace {

void append_reply(const Reply& r, std::string& out) {
  auto line = [&out](char type, const std::string& text) {
    out += type;
    for (char c : text) out += (c == '\r' || c == '\n') ? ' ' : c;
    out += "\r\n";
  };
  switch (r.type) {
    case Reply::Type::kNil:
      out += "$-1\r\n";
      break;
    case Reply::Type::kInteger:
      out += ":" + std::to_string(r.integer) + "\r\n";
      break;
    case Reply::Type::kString:
      out += "$" + std::to_string(r.str.size()) + "\r\n" + r.str + "\r\n";
      break;
    case Reply::Type::kStatus:
      line('+', r.str);
      break;
    case Reply::Type::kError:
      line('-', r.str);
      break;
    case Reply::Type::kArray:
      out += "*" + std::to_string(r.elements.size()) + "\r\n";
      for (const auto& e : r.elements) append_reply(e, out);
      break;
  }
}

}  // namespace

std::string resp_reply(const Reply& reply) {
  std::string out;
  append_reply(reply, out);
  return out;
}

Result<std::vector<Reply>> parse_resp(std::string_view bytes, std::size_t max_values) {
  std::unique_ptr<redisReader, decltype(&redisReaderFree)> reader(redisReaderCreate(),
                                                                  &redisReaderFree);
  if (!reader) return Error::internal("out of memory reading RESP");
  reader->maxbuf = 0;  // the whole body is fed at once; it is bounded by the caller
  if (redisReaderFeed(reader.get(), bytes.data(), bytes.size()) != REDIS_OK)
    return Error::invalid("body", std::string("not RESP: ") + reader->errstr);
  std::vector<Reply> out;
  for (;;) {
    void* raw = nullptr;
    if (redisReaderGetReply(reader.get(), &raw) != REDIS_OK)
      return Error::invalid("body", std::string("not RESP: ") + reader->errstr);
    if (!raw) break;
    std::unique_ptr<redisReply, decltype(&freeReplyObject)> r(static_cast<redisReply*>(raw),
                                                              &freeReplyObject);
    if (out.size() == max_values)
      return Error::invalid("body", "more than " + std::to_string(max_values) + " values");
    out.push_back(from_hiredis(r.get()));
  }
  // Left over: a value's start it could not finish (a string), or an array
  // begun (hiredis keeps it as its reply in progress).
  if (reader->pos < reader->len || reader->reply != nullptr)
    return Error::invalid("body", "the RESP ends within a value");
  return out;
}

Result<std::vector<std::vector<std::string>>> parse_commands(std::string_view bytes,
                                                             std::size_t max_commands) {
  auto values = parse_resp(bytes, max_commands);
  if (!values) return values.error();
  std::vector<std::vector<std::string>> out;
  out.reserve(values->size());
  for (std::size_t i = 0; i < values->size(); ++i) {
    auto& v = (*values)[i];
    bool strings = v.is_array() && !v.elements.empty();
    for (const auto& e : v.elements) strings = strings && e.type == Reply::Type::kString;
    if (!strings)
      return Error::invalid(
          "body", "value " + std::to_string(i) + " is not a command (an array of bulk strings)");
    std::vector<std::string> argv;
    argv.reserve(v.elements.size());
    for (auto& e : v.elements) argv.push_back(std::move(e.str));
    out.push_back(std::move(argv));
  }
  return out;
}

}  // namespace hpo::trials::redis
